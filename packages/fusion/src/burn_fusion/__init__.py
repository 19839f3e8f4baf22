"""Kernel-fusion backend decorator for Burn for Python."""

from ._version import __version__ as __version__

__all__: list[str] = []
