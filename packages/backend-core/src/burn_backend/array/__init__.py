"""The backend interface implemented once over an array namespace, for backend authors.

``ArrayBackend`` implements every op of the interface against an array namespace ``xp`` (the Array
API standard's names, which NumPy 2, CuPy 14 and ``array_api_strict`` provide); ``ArrayRuntime``
holds what namespaces do differently. A backend over another array library is a subclass setting
``name``, ``is_cpu`` and ``runtime``, overriding only what its library does better. ``burn_ndarray``
(NumPy) and ``burn_cuda`` (CuPy) are such bindings.
"""

from ._activation import ArrayActivationOps as ArrayActivationOps
from ._backend import ArrayBackend as ArrayBackend
from ._bool import ArrayBoolOps as ArrayBoolOps
from ._float import ArrayFloatOps as ArrayFloatOps
from ._int import ArrayIntOps as ArrayIntOps
from ._lowp import in_f32 as in_f32
from ._module import ArrayModuleOps as ArrayModuleOps
from ._runtime import LOW_PRECISION as LOW_PRECISION
from ._runtime import ArrayRuntime as ArrayRuntime
from ._runtime import along_axis_index as along_axis_index

__all__ = [
    "ArrayFloatOps",
    "ArrayIntOps",
    "ArrayBoolOps",
    "ArrayModuleOps",
    "ArrayActivationOps",
    "ArrayBackend",
    "ArrayRuntime",
    "in_f32",
    "LOW_PRECISION",
    "along_axis_index",
]
