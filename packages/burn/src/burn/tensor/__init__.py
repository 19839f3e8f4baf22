"""Tensors, dtypes, shapes, data, distributions and devices: the public API of ``burn-backend-core``
(``burn_backend``), with its functions in ``burn.tensor.activation``, ``burn.tensor.module`` and
``burn.tensor.signal``.

Example:
    >>> from burn.tensor import Tensor
    >>> Tensor.ones([2, 3]).sum().item()
    6.0
"""

from burn_backend import *  # noqa: F403
from burn_backend import __all__ as __all__

from . import activation as activation
from . import module as module
from . import signal as signal
