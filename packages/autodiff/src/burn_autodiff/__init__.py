"""Reverse-mode automatic differentiation for any Burn for Python backend."""

from ._version import __version__ as __version__

__all__: list[str] = []
