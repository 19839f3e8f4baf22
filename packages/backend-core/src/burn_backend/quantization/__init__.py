"""Quantized tensors (Burn's ``QTensorOps`` and ``QuantScheme``): schemes, the host form of quantized
values, and the op group backends implement.

Example:
    >>> from burn_backend import Tensor
    >>> from burn_backend.quantization import QuantScheme
    >>> x = Tensor.from_data([[1.0, -2.0, 0.5, 4.0]])
    >>> q = x.quantize_dynamic(QuantScheme())
    >>> q.is_quantized, q.quantized_data().values.tolist()
    (True, [[32, -64, 16, 127]])
"""

from ._data import QuantizedData as QuantizedData
from ._ops import DEFAULT_OPS as DEFAULT_OPS
from ._ops import QTensorOps as QTensorOps
from ._scheme import QuantMode as QuantMode
from ._scheme import QuantParam as QuantParam
from ._scheme import QuantScheme as QuantScheme
from ._scheme import QuantStore as QuantStore
from ._scheme import QuantValue as QuantValue
from ._scheme import is_quantized as is_quantized

__all__ = [
    "DEFAULT_OPS",
    "QTensorOps",
    "QuantMode",
    "QuantParam",
    "QuantScheme",
    "QuantStore",
    "QuantValue",
    "QuantizedData",
    "is_quantized",
]
