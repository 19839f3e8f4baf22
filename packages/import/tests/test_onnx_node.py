"""The ONNX backend node tests shipped inside the ``onnx`` package, run through ``burn_import.onnx.load``.

Every case runs. The cases that do not pass are listed, each with its reason, in
``onnx_node_exclusions.txt`` beside this file; they run as strict expected failures, so a case that
starts passing (or a listed name that no longer exists) fails the suite until the list is updated.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

EXCLUSIONS = Path(__file__).with_name("onnx_node_exclusions.txt")


def read_exclusions(path: Path = EXCLUSIONS) -> dict[str, str]:
    """``name: reason`` lines (``#`` starts a comment) as a dict."""
    found: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, reason = line.partition(":")
        found[name.strip()] = reason.strip()
    return found


def load_cases() -> list[Any]:
    """The node test cases of the installed ``onnx`` (its generator warns on purpose: silenced)."""
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sorted(load_model_tests(kind="node"), key=lambda case: case.name)


def run_case(case: Any) -> None:
    """Load the case's model, run every data set, compare with the reference outputs (values within the
    case's tolerances, dtypes and shapes equal)."""
    import burn_import.onnx as burn_onnx
    from burn_backend import default_device

    model = burn_onnx.load(case.model, default_device())
    for inputs, expected in case.data_sets:
        outputs = model.run(*[_input(v) for v in inputs])
        assert len(outputs) == len(expected), f"{len(outputs)} outputs, expected {len(expected)}"
        for got, want in zip(outputs, expected):
            _compare(got, _input(want), case.rtol, case.atol)


def _input(value: Any) -> Any:
    """A data-set value as NumPy arrays (some cases store ``TensorProto``s, as files would)."""
    if isinstance(value, list):
        return [_input(v) for v in value]
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    if isinstance(value, onnx.SequenceProto):
        return [_input(v) for v in onnx.numpy_helper.to_list(value)]
    if isinstance(value, onnx.OptionalProto):
        return _input(onnx.numpy_helper.to_optional(value))
    return value


def _compare(got: Any, want: Any, rtol: float, atol: float) -> None:
    """As ``onnx.backend.test.runner.Runner.assert_similar_outputs``: shapes and dtypes equal, values
    within the case's tolerances."""
    if isinstance(want, list):
        assert isinstance(got, list), f"expected a sequence, got {type(got).__name__}"
        assert len(got) == len(want), f"sequence of {len(got)}, expected {len(want)}"
        for g, w in zip(got, want):
            _compare(g, w, rtol, atol)
        return
    if want is None:
        assert got is None, "expected an empty optional"
        return
    want = np.asarray(want)
    array = got.to_numpy() if hasattr(got, "to_numpy") else np.asarray(got)
    assert array.dtype == want.dtype, f"dtype {array.dtype}, expected {want.dtype}"
    assert array.shape == want.shape, f"shape {array.shape}, expected {want.shape}"
    if want.dtype.name == "bfloat16":  # as onnx's own runner: two bfloat16 ulps, compared in float32
        rtol = max(rtol, 2**-6)
        array, want = array.astype(np.float32), want.astype(np.float32)
    np.testing.assert_allclose(array, want, rtol=rtol, atol=atol)


CASES = load_cases()
EXCLUDED = read_exclusions()


def test_exclusions_name_existing_cases() -> None:
    names = {case.name for case in CASES}
    stale = sorted(set(EXCLUDED) - names)
    assert not stale, f"onnx_node_exclusions.txt names cases the installed onnx does not have: {stale}"


def _params() -> list[Any]:
    params = []
    for case in CASES:
        marks = []
        if case.name in EXCLUDED:
            marks.append(pytest.mark.xfail(reason=EXCLUDED[case.name], strict=True))
        params.append(pytest.param(case, id=case.name, marks=marks))
    return params


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("case", _params())
def test_node(case: Any) -> None:
    run_case(case)
