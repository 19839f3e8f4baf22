"""Collectives over devices (``all_reduce``, ``CollectiveGroup``, ``ReduceOperation``):
``burn_backend.distributed``."""

from burn_backend.distributed import *  # noqa: F403
from burn_backend.distributed import __all__ as __all__
