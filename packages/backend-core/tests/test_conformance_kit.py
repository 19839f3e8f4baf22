"""The conformance suite as a backend author meets it: a backend still being written, the coverage spy,
the seeding of random inputs, exclusions, primitives the Tensor API cannot read, and tests that hold
whatever the backend's default float dtype.

The backends are NdArray with some methods taken away or broken; ``run_kit`` runs the suite on them in a
fresh process, naming them ``test_conformance_kit:Name()``.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

import burn_backend._registry as _registry
from burn_backend import Backend, DType, Tensor, parse_device
from burn_backend.testing import _spy, interface_methods
from burn_backend.testing._partial import (
    allowing_partial_backends,
    completed,
    completed_namespace,
    stubbed_methods,
)
from burn_backend.testing._plugin import exclusion_matches
from burn_backend.testing.test_zz_coverage import test_every_interface_method_was_called as coverage_check
from burn_ndarray import NdArray

MODULE = Path(__file__).stem
RunKit = Callable[..., Any]  # the ``run_kit`` fixture: arguments of pytest -> a ``KitRun``
REDUCTIONS = "float/test_reductions.py::"
MATH = "float/test_math.py::"


class Partial(NdArray):
    """NdArray without ``float_erf`` and ``int_cumsum``: a backend that is still being written."""

    float_erf = interface_methods()["float_erf"]
    int_cumsum = interface_methods()["int_cumsum"]


class BrokenCumsum(NdArray):
    """NdArray whose float cumsum is wrong, with the tests it fails excluded by test-id patterns."""

    conformance_exclusions: ClassVar[dict[str, str]] = {
        f"{REDUCTIONS}test_running[*cumsum*]": "cumsum is off by one",
        f"{REDUCTIONS}test_running_of_laid_out_inputs[*cumsum*]": "cumsum is off by one",
    }

    def float_cumsum(self, tensor: Any, dim: int) -> Any:
        return super().float_cumsum(tensor, dim) + 1


class StaleExclusion(NdArray):
    """NdArray with an exclusion pattern that names no test (a typo)."""

    conformance_exclusions: ClassVar[dict[str, str]] = {f"{REDUCTIONS}test_runing[*cumsum*]": "a typo"}


# -- a partial backend -----------------------------------------------------------------------------
def test_a_partial_backend_cannot_be_built_outside_the_suite() -> None:
    with pytest.raises(TypeError, match="abstract"):
        Partial()


def test_the_suite_builds_a_partial_backend_with_stubs_that_name_the_method() -> None:
    backend = completed(Partial)(float_dtype="f64")
    assert isinstance(backend, Partial)
    assert type(backend) is completed(Partial)
    assert type(backend).__name__ == "Partial"
    assert backend.float_dtype is DType.F64
    assert stubbed_methods(backend) == {"float_erf", "int_cumsum"}
    assert stubbed_methods(NdArray()) == frozenset()
    with pytest.raises(NotImplementedError, match=r"Partial\.float_erf is not implemented"):
        backend.float_erf(np.zeros(2))


def test_a_module_expression_builds_the_completed_class() -> None:
    namespace = completed_namespace({"Partial": Partial, "NdArray": NdArray, "Backend": Backend, "x": 1})
    assert namespace == {"Partial": completed(Partial), "NdArray": NdArray, "Backend": Backend, "x": 1}
    backend = eval("Partial(float_dtype='f64')", namespace)
    assert stubbed_methods(backend) == {"float_erf", "int_cumsum"}


def test_a_device_spec_builds_the_completed_class(monkeypatch: pytest.MonkeyPatch) -> None:
    installed = _registry.registered()
    monkeypatch.setitem(sys.modules, "partial_backend", sys.modules[__name__])  # a name entry points take
    entry = importlib.metadata.EntryPoint("partial", "partial_backend:Partial", _registry.ENTRY_POINT_GROUP)
    monkeypatch.setattr(_registry, "registered", lambda: {**installed, "partial": entry})
    monkeypatch.setattr(_registry, "_backends", {})
    monkeypatch.setattr(_registry, "_devices", {})
    load = _registry._load
    with pytest.raises(TypeError, match="abstract"):
        parse_device("partial")
    with allowing_partial_backends():
        device = parse_device("partial")
    assert _registry._load is load
    assert stubbed_methods(device.backend) == {"float_erf", "int_cumsum"}


@pytest.mark.slow
def test_the_suite_runs_a_partial_backend_failing_only_what_it_lacks(run_kit: RunKit) -> None:
    suite = [
        f"burn_backend.testing.{name}"
        for name in ("float.test_math", "int.test_reductions", "test_signatures")
    ]
    partial, whole = f"{MODULE}:Partial()", "burn_ndarray:NdArray()"
    run = run_kit("--pyargs", *suite, "--backend", partial, "--backend", whole)
    assert "Can't instantiate" not in run.output
    assert run.count("error") == 0, run.output[-3000:]
    assert run.count("passed") > 1000
    failures = run.failures()
    # what NdArray itself fails (nothing, when it conforms) is not the partial backend's doing
    known = {name.replace(whole, "") for name in failures if whole in name}
    lacking = {
        name: message
        for name, message in failures.items()
        if partial in name and name.replace(partial, "") not in known
    }
    assert any("erf" in name for name in lacking)
    assert any("cumsum" in name for name in lacking)
    assert f"test_backend_implements_every_required_method[{partial}]" in lacking
    for name, message in lacking.items():
        assert "is not implemented" in message or "does not implement 2 methods" in message, (name, message)
    assert "not implemented (2)" in run.output
    assert "float_erf, int_cumsum" in run.output


# -- the coverage spy ------------------------------------------------------------------------------
@pytest.fixture
def spied_partial(monkeypatch: pytest.MonkeyPatch) -> Backend:
    """A partial backend with the spy installed (its counts kept apart from the suite's)."""
    monkeypatch.setattr(_spy, "_counts", {})
    backend = completed(Partial)()
    _spy.install(backend)
    return backend


def test_the_spy_counts_only_calls_that_returned(spied_partial: Backend) -> None:
    device = spied_partial.device(0)
    x = Tensor.from_data([0.5, 1.0], device)
    with pytest.raises(NotImplementedError, match=r"Partial\.float_erf"):
        x.erf()
    counts = _spy.calls(spied_partial)
    assert counts["float_erf"] == 0
    x.exp()
    assert counts["float_exp"] == 1


def test_a_method_that_raised_fails_the_coverage_check(spied_partial: Backend) -> None:
    device = spied_partial.device(0)
    for name in interface_methods():  # as if the suite had called every method that works
        if name not in stubbed_methods(spied_partial):
            _spy.calls(spied_partial)[name] += 1
    with pytest.raises(NotImplementedError):
        Tensor.from_data([0.5], device).erf()  # what an excluded test of erf does: it raises
    with pytest.raises(AssertionError, match=r"2 interface methods were never called.*'float_erf'"):
        coverage_check(device, True)


# -- primitives the Tensor API cannot read ----------------------------------------------------------
class TorchLikeDtype:
    """A dtype object of another library."""

    def __repr__(self) -> str:
        return "torch.float64"


class Foreign:
    """A primitive whose dtype is not a NumPy dtype or a DType."""

    def __init__(self, array: np.ndarray[Any, Any]) -> None:
        self.shape = array.shape
        self.dtype = TorchLikeDtype()


class ForeignAdd(NdArray):
    """NdArray whose ``float_add`` returns a ``Foreign`` primitive."""

    def float_add(self, lhs: Any, rhs: Any) -> Any:
        return Foreign(super().float_add(lhs, rhs))


def test_the_spy_names_the_op_that_returned_an_unreadable_primitive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_spy, "_counts", {})
    backend = ForeignAdd()
    _spy.install(backend)
    x = Tensor.from_data([1.0, 2.0], backend.device(0))
    with pytest.raises(
        TypeError, match=r"ForeignAdd\.float_add returned a Foreign whose dtype is torch"
    ) as error:
        x + x
    assert "`shape`, a tuple of ints, and `dtype`, a NumPy dtype or a DType" in str(error.value)


def test_the_spy_rejects_a_shape_that_is_not_a_tuple_of_ints() -> None:
    primitive = types.SimpleNamespace(shape=[2, 3], dtype=np.dtype(np.float32))
    with pytest.raises(
        TypeError, match=r"Mine\.float_exp returned a SimpleNamespace whose shape is \[2, 3\]"
    ):
        _spy.check_primitive(primitive, "Mine.float_exp")
    _spy.check_primitive(np.zeros((2, 3), np.float32), "Mine.float_exp")


def test_an_unreadable_primitive_says_what_a_primitive_must_provide() -> None:
    x = Tensor.from_data([1.0, 2.0], ForeignAdd().device(0))
    # no spy: the error comes when the Tensor API reads the dtype
    with pytest.raises(TypeError, match=r"ndarray: a primitive of type Foreign has dtype torch") as error:
        (x + x).dtype  # noqa: B018
    assert "must have `shape`, a tuple of ints, and `dtype`" in str(error.value)


# -- seeding -----------------------------------------------------------------------------------------
# a plugin for the run below: it records the state of each test's generator before the test draws
PROBE = """
import json

import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    rng = item.funcargs.get("rng")
    if rng is not None:
        spelled_out = "burn_ndarray:NdArray()" in item.name
        test = item.name.replace("burn_ndarray:NdArray()", "ndarray")
        with open("draws.jsonl", "a") as out:
            out.write(json.dumps([test, spelled_out, rng.bit_generator.state["state"]["state"]]) + "\\n")
"""


@pytest.mark.slow
def test_random_inputs_do_not_depend_on_how_the_backend_is_spelled(run_kit: RunKit, tmp_path: Path) -> None:
    (tmp_path / "rng_probe.py").write_text(PROBE)
    run = run_kit(
        "-p",
        "rng_probe",
        "--pyargs",
        "burn_backend.testing.float.test_arithmetic",
        "-k",
        "hypot or atan2 or cross or matmul",
        "--backend",
        "ndarray",
        "--backend",
        "burn_ndarray:NdArray()",
    )
    assert run.count("passed") > 0, run.output[-3000:]
    draws: dict[str, dict[bool, int]] = {}  # test -> whether the backend was spelled out -> generator state
    for line in (tmp_path / "draws.jsonl").read_text().splitlines():
        test, spelled_out, state = json.loads(line)
        draws.setdefault(test, {})[spelled_out] = state
    assert len(draws) > 20
    assert all(by_spelling.keys() == {False, True} for by_spelling in draws.values())
    assert all(by_spelling[False] == by_spelling[True] for by_spelling in draws.values())
    assert len({by_spelling[False] for by_spelling in draws.values()}) == len(draws)  # yet each test differs


# -- exclusions --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("pattern", "test_id", "matches"),
    [
        (f"{REDUCTIONS}test_running[*cumsum*]", f"{REDUCTIONS}test_running[x-cumsum-0]", True),
        (f"{REDUCTIONS}test_running[*cumsum*]", f"{REDUCTIONS}test_running[x-cummax-0]", False),
        (f"{REDUCTIONS}test_running[*cumsum*]", f"{REDUCTIONS}test_runningc", False),  # fnmatch: True
        (f"{MATH}test_erf", f"{MATH}test_erf[ndarray-f32]", True),
        (f"{MATH}test_erf", f"{MATH}test_erf_in_its_tails[ndarray-f32]", False),
        (f"{MATH}test_erf*", f"{MATH}test_erf_in_its_tails[ndarray-f32]", True),
        (f"{MATH}test_?rf", f"{MATH}test_erf[ndarray-f32]", False),
        (f"{MATH}test_[e]rf", f"{MATH}test_erf[ndarray-f32]", False),
        ("*::test_[e]rf", f"{MATH}test_[e]rf", True),
        ("*::test_erf[*-f16]", f"{MATH}test_erf[ndarray-f16]", True),
        ("*::test_erf[*-f16]", f"{MATH}test_erf[ndarray-f16-x]", False),
    ],
)
def test_exclusion_patterns_match_literally_with_star_as_the_only_wildcard(
    pattern: str, test_id: str, matches: bool
) -> None:
    assert exclusion_matches(pattern, test_id) is matches


@pytest.mark.slow
def test_excluded_tests_run_as_expected_failures(run_kit: RunKit) -> None:
    run = run_kit(
        "-rx",
        "--pyargs",
        "burn_backend.testing.float.test_reductions",
        "-k",
        "running",
        "--backend",
        f"{MODULE}:BrokenCumsum()",
    )
    assert run.returncode == 0, run.output[-3000:]
    expected_failures = [line for line in run.output.splitlines() if line.startswith("XFAIL")]
    assert len(expected_failures) == run.count("xfailed") > 10
    assert all(
        "cumsum" in line and "excluded by ndarray: cumsum is off by one" in line for line in expected_failures
    )


@pytest.mark.slow
def test_an_exclusion_that_matches_no_test_is_an_error(run_kit: RunKit) -> None:
    run = run_kit(
        "--pyargs", "burn_backend.testing.float.test_reductions", "--backend", f"{MODULE}:StaleExclusion()"
    )
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.output[-3000:]
    assert "these patterns match no test of the conformance suite" in run.output
    assert "float/test_reductions.py::test_runing[*cumsum*]" in run.output


@pytest.mark.slow
def test_an_exclusion_is_not_judged_by_a_run_that_did_not_collect_its_file(run_kit: RunKit) -> None:
    selections = [
        ["float.test_nd_indexing"],
        ["float.test_reductions", "-k", "empty"],
        ["float.test_reductions::test_running_over_empty_and_rank_1"],
    ]
    for selection in selections:
        module, *options = selection
        run = run_kit(
            "--pyargs", f"burn_backend.testing.{module}", *options, "--backend", f"{MODULE}:StaleExclusion()"
        )
        assert run.returncode == 0, run.output[-3000:]


# -- the backend's default float dtype ------------------------------------------------------------------
@pytest.mark.slow
def test_error_tests_hold_for_any_default_float_dtype(run_kit: RunKit) -> None:
    tests = [
        "burn_backend.testing.module.test_attention::test_attention_errors",
        "burn_backend.testing.module.test_conv::test_conv_errors",
        "burn_backend.testing.module.test_embedding::test_linear_errors",
        "burn_backend.testing.module.test_norm::test_layer_norm_errors",
    ]
    backends = [f"--backend=burn_ndarray:NdArray(float_dtype={dtype!r})" for dtype in ("f64", "f16")]
    run = run_kit("--pyargs", *tests, *backends)
    assert run.returncode == 0, run.output[-3000:]
    assert run.count("passed") == 8
