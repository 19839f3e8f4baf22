"""Tensors, dtypes, shapes, data and distributions: the public API of ``burn-backend-core``, with its
``activation``, ``module`` and ``signal`` functions."""

import burn_backend as _backend_core
from burn_backend import activation as activation
from burn_backend import module as module
from burn_backend import signal as signal

from ._reexport import copy_public

copy_public(globals(), _backend_core)
