"""Tensors, dtypes, shapes, data and distributions: the public API of ``burn-backend-core``."""

import burn_backend as _backend_core

from ._reexport import copy_public

copy_public(globals(), _backend_core)
