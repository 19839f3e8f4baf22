"""CuPy NVIDIA GPU backend for Burn for Python: ``Cuda()``.

Importing needs neither CuPy nor a GPU; without them ``Cuda().device_count()`` is 0.
"""

from ._backend import Cuda as Cuda
from ._backend import from_dlpack as from_dlpack
from ._backend import memory_stats as memory_stats
from ._version import __version__ as __version__

__all__ = ["Cuda", "from_dlpack", "memory_stats"]
