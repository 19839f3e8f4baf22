"""Interface defaults that run ``burn_backend.array``'s implementation over NumPy on the host.

Ops that are not a short composition of other ops (pooling, interpolation, folding, the real FFT, CTC
loss, deformable convolution) are written once, in ``burn_backend.array``. Their interface default is
``run_on_host(self, name, ...)``: the primitives among its arguments are read with the backend's
``*_into_data``, the array method ``name`` runs on a NumPy ``ArrayBackend`` with the same
``int_dtype``, and the arrays it returns (alone, in a tuple or in a named tuple) are written back with
``*_from_data`` on the device of the first primitive argument. Dtypes are kept; f16 and bf16 compute
in f32 there, rounded once.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .._data import TensorData
from .._dtype import DType


def _kind(dtype: DType) -> str:
    return "float" if dtype.is_float else "bool" if dtype is DType.BOOL else "int"


@functools.lru_cache(maxsize=8)
def host_backend(int_dtype: DType) -> Any:
    """The NumPy ``ArrayBackend`` the host defaults run on."""
    from ..array import ArrayBackend, ArrayRuntime

    class Host(ArrayBackend):
        name = "host-numpy"
        is_cpu = True
        runtime = ArrayRuntime(np)

    return Host(int_dtype=int_dtype)


def run_on_host(b: Any, name: str, *args: Any) -> Any:
    """``burn_backend.array``'s method ``name`` applied to ``args`` for backend ``b`` (see above)."""
    device = None

    def to_host(arg: Any) -> Any:
        nonlocal device
        if not hasattr(arg, "dtype"):
            return arg
        kind = _kind(DType.of(arg.dtype))
        if device is None:
            device = getattr(b, f"{kind}_device")(arg)
        return getattr(b, f"{kind}_into_data")(arg).to_numpy()

    def back(result: Any) -> Any:
        if isinstance(result, tuple):
            results = [back(r) for r in result]
            return type(result)(*results) if hasattr(result, "_fields") else tuple(results)
        if not isinstance(result, np.ndarray):
            return result
        data = TensorData.from_numpy(np.ascontiguousarray(result))
        return getattr(b, f"{_kind(data.dtype)}_from_data")(data, device)

    host_args = [to_host(arg) for arg in args]
    with np.errstate(all="ignore"):
        return back(getattr(host_backend(b.int_dtype), name)(*host_args))
