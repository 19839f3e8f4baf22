"""The backend over ``array_api_strict`` (``array_api_backend.py``): the worked example of the "Writing a
backend" chapter stays a page, shown there as it is; its dtypes are read without comparing them with
NumPy's; and the conformance kit runs on it by its spec. CI runs the whole suite on it (noxfile's
``suite``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import array_api_strict as xp
import numpy as np
import pytest

from burn_backend import DType, Kind, Tensor
from burn_backend.array import ArrayBackend, ArrayRuntime

EXAMPLE = Path(__file__).with_name("array_api_backend.py")
CHAPTER = Path(__file__).parents[3] / "docs" / "advanced" / "writing-a-backend.md"
RunKit = Callable[..., Any]  # the ``run_kit`` fixture: arguments of pytest -> a ``KitRun``


@pytest.fixture
def backend(monkeypatch: pytest.MonkeyPatch) -> ArrayBackend:
    """``ArrayApiStrict()``, imported as the conformance kit's spec names it."""
    monkeypatch.syspath_prepend(str(EXAMPLE.parent))
    example: ArrayBackend = importlib.import_module("array_api_backend").ArrayApiStrict()
    return example


def test_the_example_is_a_page_of_code() -> None:
    assert len(EXAMPLE.read_text().splitlines()) <= 150


def test_the_chapter_shows_the_example_as_it_is() -> None:
    if not CHAPTER.exists():
        pytest.skip("the documentation is not beside this package (not a checkout of the monorepo)")
    assert f"```python\n{EXAMPLE.read_text()}```" in CHAPTER.read_text()


def test_the_runtime_has_the_namespaces_dtypes_only(backend: ArrayBackend) -> None:
    runtime = backend.runtime
    assert set(runtime.dtypes) == set(DType) - {DType.F16, DType.BF16}
    assert runtime.dtype(DType.U16) == xp.uint16
    with pytest.raises(TypeError, match="no f16"):
        runtime.dtype(DType.F16)
    assert not backend.supports_dtype(backend.device(), DType.BF16)
    # NumPy's runtime keeps NumPy's dtype objects, f16 and bf16 included
    assert ArrayRuntime(np).dtypes == {dtype: dtype.numpy for dtype in DType}


@pytest.mark.parametrize("dtype", sorted(set(DType) - {DType.F16, DType.BF16}, key=str))
def test_tensors_read_the_namespaces_dtypes(backend: ArrayBackend, dtype: DType) -> None:
    # warnings are errors here: array_api_strict warns whenever one of its dtypes meets one of NumPy's
    strict = Tensor.from_data(np.zeros((2, 3), dtype.numpy), backend.device(), dtype)
    host = Tensor.from_data(np.zeros((2, 3), dtype.numpy), "ndarray", dtype)
    for tensor in (strict, host, strict):  # caches keyed by dtype see both libraries' dtypes
        assert tensor.dtype is dtype
        assert tensor.kind is dtype.kind
        assert DType.of(tensor.primitive.dtype) is dtype
        if dtype.kind is Kind.INT:
            assert (tensor + 1).sum().into_scalar() == 6
            assert not (tensor > np.iinfo(dtype.numpy).max).any().into_scalar()
    assert type(strict.primitive).__module__.startswith("array_api_strict")
    assert strict.into_data().to_numpy().dtype == dtype.numpy


def test_the_conformance_kit_runs_on_it_by_its_spec(run_kit: RunKit) -> None:
    files = ["burn_backend.testing.core.test_creation", "burn_backend.testing.core.test_data"]
    run = run_kit("-W", "error", "--pyargs", *files, "--backend", "array_api_backend:ArrayApiStrict()")
    assert run.returncode == 0, run.output
    assert run.count("passed") > 100
    assert run.count("failed") == 0
