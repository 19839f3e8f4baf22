"""Config: declaration, with_<field>, JSON round trips and errors."""

from __future__ import annotations

import dataclasses
import enum

import pytest

from burn_nn import Config, ConfigError, Initializer, LinearConfig


class Mode(enum.Enum):
    FAST = 1
    SLOW = 2


class Inner(Config):
    size: int
    rate: float = 0.5


class Outer(Config):
    name: str
    inner: Inner
    shape: tuple[int, int] = (3, 3)
    mode: Mode = Mode.FAST
    optional: float | None = None
    init: Initializer = Initializer.Normal(0.0, 0.02)
    sizes: list[int] = dataclasses.field(default_factory=lambda: [1, 2])


def test_required_positional_defaults_and_with_methods() -> None:
    config = Outer("model", Inner(4))
    assert config.inner.rate == 0.5
    assert config.shape == (3, 3)
    changed = config.with_shape((5, 5)).with_mode(Mode.SLOW)
    assert changed.shape == (5, 5)
    assert changed.mode is Mode.SLOW
    assert config.shape == (3, 3)  # configs are frozen values
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Outer("model")  # type: ignore[call-arg]
    with pytest.raises(AttributeError, match="Outer has no attribute 'with_missing'"):
        config.with_missing(1)


def test_json_round_trip_of_nested_values(tmp_path) -> None:
    config = Outer("model", Inner(4, 0.1), optional=2.5, init=Initializer.KaimingUniform(1.0, True))
    assert Outer.from_json(config.to_json()) == config
    path = tmp_path / "config.json"
    config.save(path)
    assert Outer.load(path) == config
    assert not (tmp_path / "config.json.tmp").exists()
    assert '"KaimingUniform": {' in path.read_text()


def test_repr_is_the_json() -> None:
    text = repr(LinearConfig(2, 3))
    assert text.startswith('LinearConfig {\n  "d_input": 2,\n  "d_output": 3,')


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"inner": {"size": 1}}', "required field 'name' of Outer is missing"),
        ('{"name": "a", "inner": {"size": 1}, "bogus": 1}', "unknown field"),
        ('{"name": "a", "inner": {"size": "x"}}', r"Outer.inner.size: expected int, got 'x'"),
        ('{"name": "a", "inner": {"size": 1}, "mode": "MEDIUM"}', "'MEDIUM' is not a Mode"),
        ('{"name": "a", "inner": {"size": 1}, "init": {"Magic": {}}}', "'Magic' is not a Initializer"),
        ('{"name": "a", "inner": {"size": 1}, "shape": [1]}', "expected 2 values, got 1"),
        ("[1]", "expected a JSON object"),
        ("{", "not valid JSON"),
    ],
)
def test_bad_json_gets_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Outer.from_json(text)


def test_ints_are_accepted_for_float_fields_but_bools_are_not_ints() -> None:
    assert Inner.from_json('{"size": 2, "rate": 1}').rate == 1.0
    with pytest.raises(ConfigError, match="expected int, got True"):
        Inner.from_json('{"size": true}')


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: LinearConfig("4", 3), r"^LinearConfig: d_input must be an int, got '4' \(str\)"),
        (lambda: LinearConfig(4, 3.0), r"^LinearConfig: d_output must be an int, got 3\.0 \(float\)"),
        (lambda: LinearConfig(True, 3), r"^LinearConfig: d_input must be an int, got True \(bool\)"),
        (lambda: LinearConfig(4, 3, bias=1), r"^LinearConfig: bias must be a bool, got 1 \(int\)"),
        (lambda: LinearConfig(4, 3).with_d_input("8"), r"^LinearConfig: d_input must be an int, got '8'"),
        (lambda: Inner(2, rate="fast"), r"^Inner: rate must be a float, got 'fast'"),
        (lambda: Outer("model", {"size": 2}), r"^Outer: inner must be an Inner, got \{'size': 2\}"),
        (lambda: Outer("model", Inner(2), shape=(3, "3")), r"^Outer: shape\[1\] must be an int, got '3'"),
        (lambda: Outer("model", Inner(2), mode="FAST"), r"^Outer: mode must be a Mode, got 'FAST'"),
        (lambda: Outer("model", Inner(2), optional="1"), r"^Outer: optional must be a float or None"),
        (lambda: Outer("model", Inner(2), sizes=[1, None]), r"^Outer: sizes\[1\] must be an int, got None"),
    ],
    ids=[
        "str-for-int", "float-for-int", "bool-for-int", "int-for-bool", "with", "nested-field",
        "dict-for-config", "tuple-item", "name-for-enum", "optional", "list-item",
    ],
)  # fmt: skip
def test_field_types_are_checked_at_construction(build, message) -> None:
    with pytest.raises(TypeError, match=message):
        build()


def test_numbers_of_other_types_fit_their_fields() -> None:
    np = pytest.importorskip("numpy")
    config = LinearConfig(np.int64(4), 3)
    assert config.d_input == 4
    assert Inner(2, rate=1).rate == 1
    assert Outer("model", Inner(2), optional=None).optional is None
