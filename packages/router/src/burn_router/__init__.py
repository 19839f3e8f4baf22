"""Multi-backend router for Burn for Python: ``Router(*backends)``, one backend over several."""

from ._router import Routed as Routed
from ._router import Router as Router
from ._version import __version__ as __version__

__all__ = ["Routed", "Router"]
