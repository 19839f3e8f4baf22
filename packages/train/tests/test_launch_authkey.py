"""The launcher's key: taken from ``BURN_AUTHKEY`` or ``--authkey-file``, never from or onto a command
line (which every local user can read in the process list)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from burn_train import launch as launcher

KEY = "c0ffee" * 6

# what each process of the run sees: its full command line as the system shows it, and its key
_REPORT = (
    "import json, os, sys\n"
    "cmdline = open('/proc/self/cmdline', 'rb').read().decode()\n"
    "path = os.path.join(sys.argv[1], os.environ['BURN_RANK'] + '.json')\n"
    "json.dump({'cmdline': cmdline, 'key': os.environ['BURN_AUTHKEY']}, open(path, 'w'))\n"
)

needs_proc = pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="no /proc on this system")


def _reports(tmp_path: Path, argv: list[str]) -> list[dict[str, str]]:
    script = tmp_path / "report.py"
    script.write_text(_REPORT)
    assert launcher.main(["--nproc-per-node", "2", *argv, str(script), str(tmp_path)]) == 0
    return [json.loads((tmp_path / f"{rank}.json").read_text()) for rank in range(2)]


@needs_proc
def test_the_processes_get_the_key_from_the_environment_not_their_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BURN_AUTHKEY", KEY)
    for report in _reports(tmp_path, []):
        assert report["key"] == KEY
        assert "report.py" in report["cmdline"]
        assert KEY not in report["cmdline"]


@needs_proc
def test_the_key_file_route(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURN_AUTHKEY", "ab" * 16)  # the file comes first
    key_file = tmp_path / "run.key"
    key_file.write_text(f"  {KEY}\n")
    key_file.chmod(0o600)
    for report in _reports(tmp_path, ["--authkey-file", str(key_file)]):
        assert report["key"] == KEY
        assert KEY not in report["cmdline"]


@needs_proc
def test_without_a_key_a_single_machine_run_gets_a_fresh_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BURN_AUTHKEY", raising=False)
    first, second = _reports(tmp_path, [])
    assert first["key"] == second["key"]
    assert len(bytes.fromhex(first["key"])) == 16
    assert first["key"] not in first["cmdline"]


def test_a_key_on_the_command_line_is_refused_with_the_alternatives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        launcher.main(["--nproc-per-node", "2", "--authkey", KEY, "train.py"])
    assert exited.value.code == 2
    error = capsys.readouterr().err
    for needed in ("process list", "BURN_AUTHKEY", "--authkey-file PATH"):
        assert needed in error


def test_bad_key_files_are_named_in_the_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.key"
    with pytest.raises(ValueError, match=r"cannot read the key file .*missing\.key"):
        launcher.read_authkey_file(missing)
    empty = tmp_path / "empty.key"
    empty.write_text(" \n")
    with pytest.raises(ValueError, match=r"key file .*empty\.key.* is empty"):
        launcher.read_authkey_file(empty)
    wrong = tmp_path / "wrong.key"
    wrong.write_text("my-secret-password\n")
    with pytest.raises(ValueError, match=r"the key in .*wrong\.key.* is not hexadecimal") as caught:
        launcher.read_authkey_file(wrong)
    assert "my-secret" not in str(caught.value)
    binary = tmp_path / "binary.key"
    binary.write_bytes(os.urandom(8) + b"\xff")
    with pytest.raises(ValueError, match=r"cannot read the key file .*binary\.key"):
        launcher.read_authkey_file(binary)


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_a_key_file_other_users_can_read_gives_a_warning(tmp_path: Path) -> None:
    shared = tmp_path / "shared.key"
    shared.write_text(KEY)
    shared.chmod(0o644)
    with pytest.warns(UserWarning, match=r"can be read by other users \(mode 644\)"):
        assert launcher.read_authkey_file(shared) == KEY


def test_a_key_that_is_not_hex_is_refused_by_the_launcher(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURN_AUTHKEY", "not hex")
    with pytest.raises(ValueError, match=r"BURN_AUTHKEY.* is not hexadecimal \(7 characters\)"):
        launcher.launch([sys.executable, "-c", "pass"])
