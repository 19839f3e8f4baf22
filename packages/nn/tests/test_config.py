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
