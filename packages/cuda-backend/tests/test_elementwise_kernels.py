"""The vectorized f32 kernels take their arithmetic from backend-core's element-wise op table (their
CUDA C source is built without a GPU, so these tests run everywhere)."""

from __future__ import annotations

import pytest

from burn_cuda._ops import _elementwise

OPERATORS = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


@pytest.mark.parametrize("name", list(OPERATORS))
def test_tensor_kernel_computes_the_table_expression_per_lane(name: str) -> None:
    source = _elementwise._source(name, scalar=False)
    symbol = OPERATORS[name]
    for lane in "xyzw":
        assert f"r.{lane} = x.{lane} {symbol} y.{lane};" in source
    assert f"out[j] = a[j] {symbol} b[j];" in source
    assert f"void burn_{name}_ff(" in source


@pytest.mark.parametrize("name", list(OPERATORS))
def test_scalar_kernel_computes_the_table_expression_per_lane(name: str) -> None:
    source = _elementwise._source(name, scalar=True)
    symbol = OPERATORS[name]
    for lane in "xyzw":
        assert f"r.{lane} = x.{lane} {symbol} s;" in source
    assert f"out[j] = a[j] {symbol} s;" in source
    assert f"void burn_{name}_fs(" in source


def test_ops_beyond_one_f32_operation_have_no_vectorized_kernel() -> None:
    with pytest.raises(KeyError):
        _elementwise._source("exp", scalar=False)
