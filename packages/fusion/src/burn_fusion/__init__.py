"""Kernel-fusion backend decorator for Burn for Python: ``Fusion(inner)``.

Ops are recorded lazily in a stream per device and per thread; element-wise chains are fused into
kernels compiled by the inner backend (``Backend.compile_elementwise``), cached by relative signature;
``replay`` records a step function once and replays it where the inner backend can (CUDA graphs).
"""

from ._backend import Fusion as Fusion
from ._executor import DEFAULT_COMPILE_AFTER as DEFAULT_COMPILE_AFTER
from ._replay import Replayed as Replayed
from ._replay import can_replay as can_replay
from ._replay import replay as replay
from ._tensor import FusionTensor as FusionTensor
from ._version import __version__ as __version__

__all__ = ["DEFAULT_COMPILE_AFTER", "Fusion", "FusionTensor", "Replayed", "can_replay", "replay"]
