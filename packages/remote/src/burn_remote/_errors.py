"""The errors of the remote backend: what the client raises, and what closes a server session."""

from __future__ import annotations


class RemoteError(Exception):
    """An error of the remote backend: the base of the others.

    Example:
        >>> issubclass(RemoteConnectionError, RemoteError)
        True
    """


class RemoteConnectionError(RemoteError, ConnectionError):
    """The server could not be reached, refused the session (a wrong token), closed it, did not answer
    within the timeout, or died. The message names the server and the last op sent.

    Example:
        >>> str(RemoteConnectionError("ws://127.0.0.1:1: refused"))
        'ws://127.0.0.1:1: refused'
    """


class RemoteOpError(RemoteError):
    """An op failed on the server. Ops are streamed without waiting, so the error surfaces at the next
    read (or shape the client had to ask for); it names the op that failed and the server's message.
    Where the server's error was a ``ValueError``, ``TypeError``, ``IndexError``, ``NotImplementedError``,
    ``OverflowError``, ``ZeroDivisionError`` or ``MemoryError``, the client's error is also one of those
    (``remote_op_error`` builds it), so ``except ValueError`` still catches it.

    Example:
        >>> error = remote_op_error("ValueError", "float_reshape: 6 values into [4]")
        >>> isinstance(error, RemoteOpError) and isinstance(error, ValueError)
        True
    """


class ProtocolError(RemoteError):
    """A frame that breaks the wire format or the session's limits: the server closes the session
    with this reason (the client gets a ``RemoteConnectionError`` naming it).

    Example:
        >>> str(ProtocolError("unknown op 'os_system'"))
        "unknown op 'os_system'"
    """


# the server's error types a client re-raises as its own (a RemoteOpError that is also the builtin type);
# any other is a plain RemoteOpError. Names come from this table, never from the wire.
_BUILTIN_ERRORS: dict[str, type[Exception]] = {
    error.__name__: error
    for error in (
        ValueError,
        TypeError,
        IndexError,
        NotImplementedError,
        OverflowError,
        ZeroDivisionError,
        MemoryError,
        KeyError,
    )
}
_ERROR_CLASSES: dict[str, type[RemoteOpError]] = {
    name: type(f"Remote{name}", (RemoteOpError, builtin), {"__module__": __name__})
    for name, builtin in _BUILTIN_ERRORS.items()
}


def error_kind(error: BaseException) -> str:
    """The name the server sends for ``error``: its nearest builtin type of the table, else ``"Error"``."""
    for name, builtin in _BUILTIN_ERRORS.items():
        if isinstance(error, builtin):
            return name
    return "Error"


def remote_op_error(kind: str, message: str) -> RemoteOpError:
    """The client's error for an op that failed on the server with an error of ``kind`` (a name
    ``error_kind`` gave) and ``message``.

    Example:
        >>> type(remote_op_error("IndexError", "out of range")).__name__
        'RemoteIndexError'
    """
    cls = _ERROR_CLASSES.get(kind, RemoteOpError)
    return cls(message)
