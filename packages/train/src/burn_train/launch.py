"""Start a data-parallel run: one process per device, as ``torchrun`` does.

    python -m burn_train.launch --nproc-per-node 2 train.py --epochs 10
    python -m burn_train.launch --nproc-per-node 8 --nnodes 2 --node-rank 0 \\
        --master-addr 10.0.0.1 --master-port 29500 --authkey-file ~/.burn/run.key train.py

Each process gets its place in the run through environment variables, which
``burn_backend.distributed.ProcessGroup.from_environment()`` (and ``LearnerBuilder.distributed()``) read:
``BURN_RANK``, ``BURN_LOCAL_RANK`` (its GPU on this machine), ``BURN_WORLD_SIZE``,
``BURN_LOCAL_WORLD_SIZE``, ``BURN_MASTER_ADDR``, ``BURN_MASTER_PORT`` and ``BURN_AUTHKEY`` (the secret the
processes prove they share when they meet); the same values are also set under the names ``torchrun`` sets
(``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``), and
``from_environment`` reads those where a ``BURN_`` name is missing. The secret never appears on a command
line, where every user of the machine could read it in the process list: the launcher takes it from
``BURN_AUTHKEY`` or from a file (``--authkey-file PATH``; a fresh one on a single machine when neither is
given), and hands it to its processes in their environment. ``--authkey VALUE`` is refused. Unless they are
set, ``OMP_NUM_THREADS`` and ``NUMBA_NUM_THREADS`` give each process its share of the machine's cores (the
thread pools of two processes, each sized for every core, starve each other). The launcher waits for its
processes; when one fails, it stops the others and exits with that process's code. Ctrl-C (or SIGTERM) is
passed on to every process, so that each stops as the Learner does (a checkpoint first).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import stat
import subprocess
import sys
import time
import warnings
from collections.abc import Sequence
from typing import Any

from burn_backend.distributed import ProcessGroup

__all__ = ["launch", "main", "read_authkey_file"]

_GRACE_S = 10.0  # how long stopped processes get to exit before they are killed


def _threads(processes: int) -> int:
    """Each process's share of this machine's cores (at least one)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, cores // processes)


def _free_port() -> int:
    """A TCP port with its successor free on this machine (the successor is the backends' own)."""
    for _ in range(100):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("burn_train.launch: found no two free consecutive TCP ports")


def launch(
    command: Sequence[str],
    nproc_per_node: int = 1,
    nnodes: int = 1,
    node_rank: int = 0,
    master_addr: str = "127.0.0.1",
    master_port: int | None = None,
    authkey: str | None = None,
) -> int:
    """Run ``command`` (a program and its arguments, such as ``[sys.executable, "train.py"]``) once per
    local rank with the run's environment, and wait for every process.

    Args:
        command: what each process runs.
        nproc_per_node: processes on this machine (one per GPU).
        nnodes: machines in the run.
        node_rank: this machine's place, in ``[0, nnodes)``; node 0 hosts rank 0.
        master_addr: the address of the machine hosting rank 0.
        master_port: the port rank 0 listens on (a free one by default on a single machine).
        authkey: the run's shared secret, in hex; ``BURN_AUTHKEY`` by default, else a fresh one on a
            single machine (several machines need the same key in every launcher). The processes get
            it in their environment, never in their arguments.

    Returns:
        0 when every process succeeded, else the exit code of the first that failed (128 + the signal
        number for a process killed by a signal).

    Raises:
        ValueError: bad sizes or ranks, several machines without a port or a key, or a key that is not
            hexadecimal.

    Example:
        >>> launch([sys.executable, "train.py"], nproc_per_node=2)  # doctest: +SKIP
        0
    """
    if nproc_per_node < 1 or nnodes < 1 or not 0 <= node_rank < nnodes:
        raise ValueError(
            f"burn_train.launch: expected nproc_per_node >= 1, nnodes >= 1 and node_rank in [0, nnodes); "
            f"got {nproc_per_node}, {nnodes}, {node_rank}"
        )
    if not command:
        raise ValueError("burn_train.launch: no program to run")
    authkey = authkey or os.environ.get("BURN_AUTHKEY")
    if nnodes > 1 and (master_port is None or not authkey):
        raise ValueError(
            "burn_train.launch: a run over several machines needs --master-port and a key (BURN_AUTHKEY "
            "or --authkey-file PATH), the same on every machine"
        )
    if authkey:
        _check_hex(authkey, "the key (BURN_AUTHKEY or the authkey argument)")
    port = master_port if master_port is not None else _free_port()
    key = authkey or ProcessGroup.new_authkey()
    world = nproc_per_node * nnodes
    # each process's BLAS and OpenMP pools would otherwise take every core, and the processes' spinning
    # threads starve each other (a step 6x slower on 2 cores); torchrun makes the same choice
    share = str(_threads(nproc_per_node))
    threads = {name: share for name in ("OMP_NUM_THREADS", "NUMBA_NUM_THREADS") if name not in os.environ}
    processes: list[subprocess.Popen[Any]] = []
    for local_rank in range(nproc_per_node):
        place = {
            "RANK": str(node_rank * nproc_per_node + local_rank),
            "LOCAL_RANK": str(local_rank),
            "WORLD_SIZE": str(world),
            "LOCAL_WORLD_SIZE": str(nproc_per_node),
            "MASTER_ADDR": master_addr,
            "MASTER_PORT": str(port),
        }
        # the names torchrun sets too, for code written against them (a key only as BURN_AUTHKEY)
        prefixed = {f"BURN_{name}": value for name, value in place.items()}
        env = {**os.environ, **threads, **place, **prefixed, "BURN_AUTHKEY": key}
        processes.append(subprocess.Popen(list(command), env=env))

    received: list[int] = []

    def forward(signum: int, frame: Any) -> None:
        received.append(signum)
        for process in processes:
            if process.poll() is None:
                process.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return _wait(processes, received)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _check_hex(key: str, what: str) -> None:
    try:
        bytes.fromhex(key)
    except ValueError:  # the key itself is not repeated
        raise ValueError(f"burn_train.launch: {what} is not hexadecimal ({len(key)} characters)") from None


def read_authkey_file(path: str | os.PathLike[str]) -> str:
    """The run's key from a file: its text, surrounding whitespace removed, in hex (such as
    ``python -c "import secrets; print(secrets.token_hex(16))" > run.key``). A file that other users can
    read gives a warning, since the key lets a process join the run.

    Args:
        path: the file, readable by this user only (``chmod 600``).

    Returns:
        The key, in hex.

    Raises:
        ValueError: the file cannot be read, is empty, or holds no hexadecimal key (it is named).

    Example:
        >>> key = read_authkey_file(Path.home() / ".burn" / "run.key")  # doctest: +SKIP
    """
    try:
        with open(path, encoding="ascii") as file:
            mode = os.fstat(file.fileno()).st_mode
            key = file.read(1 << 16).strip()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(
            f"burn_train.launch: cannot read the key file {os.fspath(path)!r}: {error}"
        ) from None
    if not key:
        raise ValueError(f"burn_train.launch: the key file {os.fspath(path)!r} is empty")
    _check_hex(key, f"the key in {os.fspath(path)!r}")
    if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
        warnings.warn(
            f"burn_train.launch: the key file {os.fspath(path)!r} can be read by other users "
            f"(mode {stat.S_IMODE(mode):o}); `chmod 600` it",
            stacklevel=2,
        )
    return key


def _wait(processes: list[subprocess.Popen[Any]], received: list[int]) -> int:
    """Wait for every process; on the first failure, stop the others and return its code. After a
    signal (passed on to the processes), they get ``_GRACE_S`` seconds to stop before they are killed."""
    signalled_at: float | None = None
    while True:
        codes = [process.poll() for process in processes]
        failed = [code for code in codes if code not in (None, 0)]
        if failed:
            _stop(processes)
            code = failed[0]
            return 128 - code if code is not None and code < 0 else int(code or 1)
        if all(code == 0 for code in codes):  # after Ctrl-C too: each stopped as asked (a checkpoint)
            return 0
        if received and signalled_at is None:
            signalled_at = time.monotonic()
        if signalled_at is not None and time.monotonic() - signalled_at > _GRACE_S:
            _stop(processes)
            return 128 + received[0]
        time.sleep(0.05)


def _stop(processes: list[subprocess.Popen[Any]]) -> None:
    for process in processes:
        if process.poll() is None:
            process.terminate()
    deadline = time.monotonic() + _GRACE_S
    for process in processes:
        try:
            process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main(argv: Sequence[str] | None = None) -> int:
    """The command line: ``python -m burn_train.launch [options] (script.py | -m module) [args...]``."""
    parser = argparse.ArgumentParser(
        prog="python -m burn_train.launch",
        description="Start one process per device for data-parallel training.",
    )
    parser.add_argument(
        "--nproc-per-node", type=int, default=1, help="processes on this machine (one per GPU)"
    )
    parser.add_argument("--nnodes", type=int, default=1, help="machines in the run")
    parser.add_argument("--node-rank", type=int, default=0, help="this machine's place in [0, nnodes)")
    parser.add_argument("--master-addr", default="127.0.0.1", help="the address of node 0")
    parser.add_argument("--master-port", type=int, default=None, help="the port rank 0 listens on")
    parser.add_argument(
        "--authkey-file",
        default=None,
        help="a file holding the run's shared secret (hex); else BURN_AUTHKEY, else a fresh one",
    )
    parser.add_argument("--authkey", default=None, help=argparse.SUPPRESS)  # refused, with the why
    parser.add_argument("-m", dest="module", default=None, help="run a module, as python -m does")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="the script and its arguments")
    args = parser.parse_args(argv)
    if args.authkey is not None:
        parser.error(
            "--authkey VALUE would show the key to every user of this machine (the process list); set "
            "BURN_AUTHKEY in the environment or pass --authkey-file PATH instead"
        )
    if args.module is not None:
        command = [sys.executable, "-m", args.module, *args.program]
    elif args.program:
        command = [sys.executable, *args.program]
    else:
        parser.error("expected a script (or -m module) to run")
    try:
        key = read_authkey_file(args.authkey_file) if args.authkey_file is not None else None
        return launch(
            command, args.nproc_per_node, args.nnodes, args.node_rank, args.master_addr, args.master_port,
            key,
        )  # fmt: skip
    except ValueError as error:
        parser.error(str(error))  # exits with 2


if __name__ == "__main__":
    sys.exit(main())
