"""Check the wheels and sdists that ``nox -s build`` wrote.

Usage: ``python check_dists.py DIST_DIR DISTRIBUTION...``. Fails unless DIST_DIR holds exactly one wheel
and one sdist per named distribution, no wheel's metadata names a path or URL dependency (a direct
reference, ``name @ url``), and no wheel ships tests.
"""

from __future__ import annotations

import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename


def wheel_problems(wheel: Path) -> list[str]:
    """What is wrong with one wheel: direct-reference dependencies, or test files shipped."""
    problems = []
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
    for line in metadata.get_all("Requires-Dist") or []:
        if Requirement(line).url is not None:
            problems.append(f"{wheel.name}: dependency with a path or URL: {line}")
    problems += [
        f"{wheel.name}: ships test file {n}" for n in names if "/tests/" in n or n.startswith("tests/")
    ]
    return problems


def main(dist_dir: Path, expected: list[str]) -> int:
    wheels = {canonicalize_name(parse_wheel_filename(w.name)[0]): w for w in dist_dir.glob("*.whl")}
    sdists = {canonicalize_name(parse_sdist_filename(s.name)[0]): s for s in dist_dir.glob("*.tar.gz")}
    expected_names = {canonicalize_name(name) for name in expected}
    problems = []
    if set(wheels) != expected_names or len(wheels) != len(list(dist_dir.glob("*.whl"))):
        problems.append(f"wheels {sorted(wheels)} != packages {sorted(expected_names)}")
    if set(sdists) != expected_names:
        problems.append(f"sdists {sorted(sdists)} != packages {sorted(expected_names)}")
    for wheel in wheels.values():
        problems += wheel_problems(wheel)
    if problems:
        print(*problems, sep="\n", file=sys.stderr)
        return 1
    for name in sorted(wheels):
        print(f"{wheels[name].name}  {sdists[name].name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2:]))
