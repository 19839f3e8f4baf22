"""Loopback servers for tests: a real ``python -m burn_remote serve`` process on a free port.

Run the conformance suite through ``Remote`` against an NdArray server with::

    python -m pytest --pyargs burn_backend.testing --backend "burn_remote.testing:loopback_remote()"
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence

from ._remote import Remote


class LoopbackServer:
    """A server process on ``127.0.0.1`` and a free port, stopped by ``stop()`` or at exit.

    Args:
        backend: the server's backend stack (``"ndarray"``).
        options: more ``serve`` options (``["--token-file", path]``).
        timeout: seconds to wait for it to listen.

    Raises:
        RuntimeError: the server did not start (its output is in the message).

    Example:
        >>> server = LoopbackServer("ndarray")
        >>> Remote(server.url).device_count() >= 1
        True
        >>> server.stop()
    """

    def __init__(self, backend: str = "ndarray", options: Sequence[str] = (), timeout: float = 60.0) -> None:
        command = [
            sys.executable,
            "-m",
            "burn_remote",
            "serve",
            "--backend",
            backend,
            "--port",
            "0",
            *options,
        ]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        # the log goes to a file: a pipe nobody reads would stall the server once full
        self._log = tempfile.TemporaryFile(mode="w+", encoding="utf-8")  # noqa: SIM115 - closed by stop()
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=self._log, text=True, env=env)
        line = self.process.stdout.readline() if self.process.stdout else ""
        if " on ws" not in line:
            self.process.kill()
            self.process.wait(timeout=timeout)
            raise RuntimeError(f"burn_remote server did not start: {line}{self.log()}")
        self.url = line.rsplit(" on ", 1)[1].strip()
        self.port = int(self.url.rsplit(":", 1)[1])
        atexit.register(self.stop)

    def log(self) -> str:
        """What the server logged so far (closed sessions and their reasons)."""
        if self._log.closed:
            return ""
        self._log.flush()
        self._log.seek(0)
        return self._log.read()

    def stop(self) -> None:
        """Stop the server process (kill it) and wait for it."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log.close()


_servers: dict[str, LoopbackServer] = {}


def loopback_remote(backend: str = "ndarray", check_shapes: bool = True) -> Remote:
    """A ``Remote`` on a loopback server process of ``backend``, started once per process.

    With ``check_shapes`` (the default here) the client checks every result's shape and dtype that it
    worked out against the server's.

    Example:
        >>> loopback_remote().server_stack
        'ndarray'
    """
    server = _servers.get(backend)
    if server is None or server.process.poll() is not None:
        server = _servers[backend] = LoopbackServer(backend)
    return Remote(server.url, check_shapes=check_shapes)  # type: ignore[abstract]  # ops set at import
