"""A backend over ``array_api_strict``, the Array API standard's reference namespace.

The worked example of docs/advanced/writing-a-backend.md, and run through the conformance suite in CI
(``--backend "array_api_backend:ArrayApiStrict()"`` with this folder importable). ``ArrayBackend``
gives every op of the backend interface, written with the standard's functions, and the default
``ArrayRuntime`` does what the standard leaves out: host transfer through DLPack, indexed updates with
duplicate indices and random draws through NumPy on the host, sliding windows by ``take``. A backend
over a namespace that follows the standard is therefore a name and a runtime. The standard has no f16
and no bf16: the backend supports the other eleven dtypes, and the suite skips the tests of those two.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import array_api_strict

from burn_backend.array import ArrayBackend, ArrayRuntime


class ArrayApiStrict(ArrayBackend):
    """The backend interface over ``array_api_strict``, on its default device.

    Args:
        float_dtype: the default float dtype (f32 unless set).
        int_dtype: the default int dtype, also that of returned indices (i64 unless set).

    Example:
        >>> from burn_backend import Tensor
        >>> Tensor.from_data([1.0, 2.0], ArrayApiStrict().device()).sum().into_scalar()
        3.0
    """

    name: ClassVar[str] = "array-api-strict"
    is_cpu: ClassVar[bool] = True  # it computes on the host
    runtime: ClassVar[ArrayRuntime] = ArrayRuntime(array_api_strict)
    conformance_exclusions: ClassVar[Mapping[str, str]] = {}  # none: it passes the whole suite
