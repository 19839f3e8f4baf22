"""Run every benchmark of this folder (``bench_*.py``), passing the command-line arguments along."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def main() -> int:
    scripts = sorted(Path(__file__).parent.glob("bench_*.py"))
    if not scripts:
        print("no benchmarks found", file=sys.stderr)
        return 1
    failed = 0
    for script in scripts:
        print(f"== {script.name}", flush=True)
        failed |= subprocess.run([sys.executable, str(script), *sys.argv[1:]], check=False).returncode
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
