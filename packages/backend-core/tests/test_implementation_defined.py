"""The implementation-defined groups of the conformance suite's special values: which inputs each covers,
that the required tests and the groups' tests share out every special value, and how a backend declares
a group (``torch_backend.py``: a backend over PyTorch, which raises for an int division by zero)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
import pytest

from burn_backend import DType
from burn_backend.kit import ELEMENTWISE_OPS
from burn_backend.testing import IMPLEMENTATION_DEFINED
from burn_backend.testing._implementation_defined import implementation_defined
from burn_backend.testing.core.test_elementwise_table import (
    SPECIAL_CASES,
    group_operands,
    required_operands,
    special_operands,
)
from burn_ndarray import NdArray

RunKit = Callable[..., Any]  # the ``run_kit`` fixture: arguments of pytest -> a ``KitRun``
TABLE = "burn_backend.testing.core.test_elementwise_table"
I8_MIN, I8_MAX = -128, 127


def groups_of(name: str, dtype: DType, *operands: Any) -> dict[str, list[bool]]:
    arrays = [np.asarray(value, dtype.numpy) if isinstance(value, list) else value for value in operands]
    found = implementation_defined(ELEMENTWISE_OPS[name], dtype, arrays)
    return {group: mask.tolist() for group, mask in found.items()}


def test_the_groups_cover_what_c_pytorch_and_numpy_disagree_on() -> None:
    lhs, rhs = [I8_MIN, I8_MIN, 7, -7], [-1, 0, 0, 2]
    assert groups_of("int_div", DType.I8, lhs, rhs) == {
        "int-division-by-zero": [False, True, True, False],  # before the minimum's overflow
        "int-overflow": [True, False, False, False],
    }
    assert groups_of("int_remainder_scalar", DType.I8, lhs, -1) == {
        "int-overflow": [True, True, False, False]
    }
    assert groups_of("int_remainder_scalar", DType.I8, lhs, 0) == {"int-division-by-zero": [True] * 4}
    assert groups_of("int_add_scalar", DType.I8, [I8_MAX, 126, I8_MIN], 1) == {
        "int-overflow": [True, False, False]
    }
    assert groups_of("int_powi", DType.I8, [2, 2, -2, -1, 3], [6, 7, 7, 101, 5]) == {
        "int-overflow": [False, True, False, False, True]  # -2**7 is the minimum
    }
    assert groups_of("int_abs", DType.I8, [I8_MIN, -I8_MAX]) == {"int-overflow": [True, False]}
    assert groups_of("int_neg", DType.U8, [1, 0]) == {}  # unsigned arithmetic is modular everywhere
    assert groups_of("bitwise_left_shift", DType.I32, [1, 1, 1, 1], [-1, 0, 31, 32]) == {
        "shift-out-of-range": [True, False, False, True]
    }
    assert groups_of("bitwise_right_shift_scalar", DType.U8, [3, 200], 8) == {
        "shift-out-of-range": [True, True]
    }
    assert groups_of("float_remainder", DType.F32, [1.0, -1.0], [np.inf, 0.0]) == {}  # IEEE's and NumPy's


@pytest.mark.parametrize(("name", "dtype"), SPECIAL_CASES, ids=[f"{n}-{d}" for n, d in SPECIAL_CASES])
def test_each_special_value_is_required_or_in_one_group(name: str, dtype: DType) -> None:
    op = ELEMENTWISE_OPS[name]

    def elements(lists: list[list[Any]]) -> int:
        shapes = [np.broadcast_shapes(*(np.shape(v) for v in inputs[: op.arity])) for inputs in lists]
        return sum(int(np.prod(shape)) for shape in shapes)

    groups = [group_operands(op, dtype, group) for group in IMPLEMENTATION_DEFINED]
    assert elements(required_operands(op, dtype)) + sum(map(elements, groups)) == elements(
        special_operands(op, dtype)
    )


def test_the_int_extremes_reach_every_group() -> None:
    reached = {group for name, dtype in SPECIAL_CASES for group in IMPLEMENTATION_DEFINED
               if group_operands(ELEMENTWISE_OPS[name], dtype, group)}  # fmt: skip
    assert reached == set(IMPLEMENTATION_DEFINED)


# -- declaring a group -------------------------------------------------------------------------------
class UnknownGroup(NdArray):
    """NdArray declaring a group the suite does not have (a typo)."""

    conformance_exclusions: ClassVar[dict[str, str]] = {"implementation-defined:int-divide-by-zero": "typo"}


@pytest.mark.slow
def test_a_backend_over_pytorch_passes_once_it_declares_the_group_it_differs_in(run_kit: RunKit) -> None:
    pytest.importorskip("torch")
    undeclared, declared = "torch_backend:TorchElementwiseUndeclared()", "torch_backend:TorchElementwise()"
    run = run_kit("--pyargs", TABLE, "-k", "special", "-rfEs", "--backend", undeclared, "--backend", declared)
    by_zero = [
        f"test_implementation_defined_special_values[{undeclared}-int-division-by-zero-{name}-{dtype}]"
        for name in ("int_div", "int_div_scalar", "int_remainder", "int_remainder_scalar")
        for dtype in ("i64", "i32", "i16", "i8", "u8")  # PyTorch has no division of u16, u32, u64
    ]
    required = [  # torch.sign(NaN) is 0: the interface's float_sign keeps NaN
        f"test_backend_computes_the_reference_at_special_values[{undeclared}-float_sign-{dtype}]"
        for dtype in ("f64", "f32")
    ]
    assert sorted(run.failures()) == sorted(by_zero + required), run.output[-3000:]
    # the declared group's tests skip, op by op and compiled, on every dtype (before require_dtype)
    reason = "implementation-defined (int-division-by-zero) on torch-elementwise: PyTorch raises"
    skipped = [line for line in run.output.splitlines() if line.startswith("SKIPPED") and reason in line]
    assert sum(int(line.split("[")[1].split("]")[0]) for line in skipped) == 2 * 4 * 8


@pytest.mark.slow
def test_an_unknown_group_is_an_error(run_kit: RunKit) -> None:
    run = run_kit(
        "--pyargs", TABLE, "-k", "special", "--backend", "test_implementation_defined:UnknownGroup()"
    )
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.output[-3000:]
    assert "no implementation-defined group ['int-divide-by-zero']" in run.output
    assert "implementation-defined:int-division-by-zero" in run.output
