"""``python -m burn_remote serve --backend ndarray --host 127.0.0.1 --port 3000 [--token-file F]``."""

from __future__ import annotations

import argparse
import logging
import ssl
import sys
from collections.abc import Sequence

from ._server import Server
from ._session import Limits


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m burn_remote", description="Burn's remote backend")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("serve", help="serve a backend to remote clients")
    run.add_argument("--backend", default="ndarray", help="the backend stack, as BURN_DEVICE names it")
    run.add_argument("--host", default="127.0.0.1", help="the address to bind (default: loopback only)")
    run.add_argument("--port", type=int, default=3000, help="the port (0: a free one, printed)")
    run.add_argument("--token-file", help="a file holding the shared secret clients must present")
    run.add_argument("--tls-cert", help="the server's TLS certificate chain (PEM): serve wss://")
    run.add_argument("--tls-key", help="the TLS certificate's private key (PEM)")
    run.add_argument("--max-frame-bytes", type=int, default=Limits.frame_bytes)
    run.add_argument("--max-tensor-bytes", type=int, default=Limits.tensor_bytes)
    run.add_argument("--max-session-bytes", type=int, default=Limits.session_bytes)
    run.add_argument("--max-sessions", type=int, default=Limits.sessions)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)

    token = None
    if args.token_file:
        with open(args.token_file, encoding="utf-8") as file:
            token = file.read().strip()
        if not token:
            parser.error(f"--token-file {args.token_file}: the file is empty")
    context = None
    if args.tls_cert or args.tls_key:
        if not (args.tls_cert and args.tls_key):
            parser.error("--tls-cert and --tls-key go together")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(args.tls_cert, args.tls_key)
    limits = Limits(args.max_frame_bytes, args.max_tensor_bytes, args.max_session_bytes, args.max_sessions)
    try:
        server = Server(args.backend, args.host, args.port, token=token, ssl=context, limits=limits)
    except (ValueError, OSError) as error:
        print(f"burn_remote: {error}", file=sys.stderr)
        return 2
    # the first line of stdout says where: a parent that asked for port 0 reads it
    print(f"burn_remote: serving {server.backend.stack_name} on {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
