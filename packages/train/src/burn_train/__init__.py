"""Training loop, data loading and metrics for Burn for Python."""

from ._version import __version__ as __version__

__all__: list[str] = []
