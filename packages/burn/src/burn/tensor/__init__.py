"""Tensors, dtypes, shapes, data, distributions and devices: the public API of ``burn-backend-core``
(``burn_backend``), with its functions in ``burn.tensor.activation``, ``burn.tensor.module``,
``burn.tensor.signal``, ``burn.tensor.linalg``, ``burn.tensor.grid`` and ``burn.tensor.distributed``.

Example:
    >>> from burn.tensor import Tensor
    >>> Tensor.ones([2, 3]).sum().item()
    6.0
"""

from burn_backend import *  # noqa: F403
from burn_backend import __all__ as __all__

from . import activation as activation
from . import distributed as distributed
from . import grid as grid
from . import linalg as linalg
from . import module as module
from . import signal as signal
