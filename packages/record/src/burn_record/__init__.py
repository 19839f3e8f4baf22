"""Recorders for Burn for Python: save and load module, optimizer and scheduler state."""

from ._version import __version__ as __version__

__all__: list[str] = []
