"""Backend interface, tensor API and conformance suite of Burn for Python."""

from ._version import __version__ as __version__

__all__: list[str] = []
