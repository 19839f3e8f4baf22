"""Remote backend for Burn for Python: ``Remote("ws://host:port")``, a backend whose ops run on a server
process (``python -m burn_remote serve``) over WebSocket, as Burn's remote backend."""

from ._errors import ProtocolError as ProtocolError
from ._errors import RemoteConnectionError as RemoteConnectionError
from ._errors import RemoteError as RemoteError
from ._errors import RemoteOpError as RemoteOpError
from ._remote import Remote as Remote
from ._server import Server as Server
from ._server import serve as serve
from ._session import Limits as Limits
from ._version import __version__ as __version__

__all__ = [
    "Limits",
    "ProtocolError",
    "Remote",
    "RemoteConnectionError",
    "RemoteError",
    "RemoteOpError",
    "Server",
    "serve",
]
