"""Tensors, dtypes, shapes, data and distributions: the public API of ``burn-backend-core``, with its
``activation`` and ``module`` functions."""

import burn_backend as _backend_core
from burn_backend import activation as activation
from burn_backend import module as module

from ._reexport import copy_public

copy_public(globals(), _backend_core)
