"""NumPy CPU backend for Burn for Python: ``NdArray()``."""

from ._backend import NdArray as NdArray
from ._version import __version__ as __version__

__all__ = ["NdArray"]
