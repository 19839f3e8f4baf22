"""A third-party-style backend whose element-wise ops are PyTorch's (CPU), for the conformance suite's
implementation-defined special values.

``TorchElementwise`` is ``ArrayApiStrict`` (``array_api_backend.py``) with every op of the element-wise
table (``burn_backend.kit.ELEMENTWISE_OPS``) computed by PyTorch: the op's expression rendered with
PyTorch's functions (``mod`` as ``torch.remainder``, ``floordiv`` as ``torch.floor_divide``, the
operators as PyTorch's), as a backend written over PyTorch calls them. It supports the dtypes but u16,
u32 and u64 (PyTorch's CPU kernels have no arithmetic on them). ``TorchElementwiseUndeclared`` is that
alone: the suite fails it where PyTorch's values are not the interface's (the sign of NaN) and where
they are implementation-defined and differ from NumPy's (an int division by zero raises).
``TorchElementwise`` fixes the one and declares the other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np
import torch
from array_api_backend import ArrayApiStrict

from burn_backend import Device, DType
from burn_backend.kit import ELEMENTWISE_OPS, ElementwiseOp

UNSUPPORTED = (DType.U16, DType.U32, DType.U64)  # PyTorch's CPU kernels have no arithmetic on them


def _like(value: Any, other: Any) -> Any:
    """``value`` as a PyTorch tensor: a Python number in the dtype of the tensor ``other``."""
    if isinstance(value, torch.Tensor):
        return value
    dtype = other.dtype if isinstance(other, torch.Tensor) else None
    return torch.tensor(value, dtype=dtype)


def _binary(function: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda a, b: function(_like(a, b), _like(b, a))


def _where(condition: Any, a: Any, b: Any) -> Any:
    return torch.where(_like(condition, None), _like(a, b), _like(b, a))


TORCH_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "abs": torch.abs,
    "sign": torch.sign,
    "sqrt": torch.sqrt,
    "exp": torch.exp,
    "log": torch.log,
    "log1p": torch.log1p,
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "sinh": torch.sinh,
    "cosh": torch.cosh,
    "tanh": torch.tanh,
    "asin": torch.asin,
    "acos": torch.acos,
    "atan": torch.atan,
    "asinh": torch.asinh,
    "acosh": torch.acosh,
    "atanh": torch.atanh,
    "atan2": _binary(torch.atan2),
    "hypot": _binary(torch.hypot),
    "pow": torch.pow,
    "erf": torch.erf,
    "erfc": torch.erfc,
    "erfinv": torch.erfinv,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "trunc": torch.trunc,
    "rint": torch.round,
    "min": _binary(torch.minimum),
    "max": _binary(torch.maximum),
    "mod": _binary(torch.remainder),
    "floordiv": _binary(torch.floor_divide),
    "where": _where,
    "isnan": torch.isnan,
    "isinf": torch.isinf,
    "logical_not": torch.logical_not,
}


def torch_method(op: ElementwiseOp) -> Callable[..., Any]:
    """The interface method of ``op`` computed by PyTorch on the host."""
    # a scalar form computes as its tensor form does (PyTorch's pow takes a number exponent itself)
    source = ELEMENTWISE_OPS[op.tensor_form] if op.tensor_form else op
    names = [f"_{index}" for index in range(op.operands)]
    code = compile(source.render(names), op.name, "eval")

    def method(self: ArrayApiStrict, *arguments: Any) -> Any:
        values = [
            torch.from_numpy(np.array(self.runtime.to_host(value))) if index < op.arity else value
            for index, value in enumerate(arguments)
        ]
        result = eval(code, dict(TORCH_FUNCTIONS), dict(zip(names, values)))
        return self.runtime.from_host(result.numpy(), None)

    method.__name__ = op.name
    return method


class TorchElementwiseUndeclared(ArrayApiStrict):
    """``ArrayApiStrict`` with PyTorch's element-wise ops, declaring no implementation-defined group.

    Example:
        >>> from burn_backend import Tensor
        >>> device = TorchElementwiseUndeclared().device()
        >>> Tensor.from_data([7, -7], device).remainder_scalar(3).to_data().to_numpy().tolist()
        [1, 2]
    """

    name: ClassVar[str] = "torch-elementwise"

    def supports_dtype(self, device: Device, dtype: DType) -> bool:
        """The dtypes of ``ArrayApiStrict`` but u16, u32 and u64."""
        return dtype not in UNSUPPORTED and super().supports_dtype(device, dtype)


for _name, _op in ELEMENTWISE_OPS.items():
    setattr(TorchElementwiseUndeclared, _name, torch_method(_op))


class TorchElementwise(TorchElementwiseUndeclared):
    """``TorchElementwiseUndeclared`` made conformant, as a backend over PyTorch is: the sign of NaN kept
    (required: ``torch.sign`` gives 0), the int division by zero declared (PyTorch raises).

    Example:
        >>> TorchElementwise.conformance_exclusions["implementation-defined:int-division-by-zero"]
        'PyTorch raises for an int division by zero'
    """

    conformance_exclusions: ClassVar[Mapping[str, str]] = {
        "implementation-defined:int-division-by-zero": "PyTorch raises for an int division by zero",
    }

    def float_sign(self, tensor: Any) -> Any:
        """-1, 0 or 1 by the sign of each value, NaN where it is NaN."""
        return self.float_mask_where(super().float_sign(tensor), self.float_is_nan(tensor), tensor)
