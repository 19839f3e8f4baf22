"""Fail if any installed ``burn-*`` distribution (the meta-package ``burn-py`` included) did not come from
this checkout, or if the unrelated ``burn`` of the package index was installed.

Usage: ``python check_local_install.py CHECKOUT``. Run inside a session's environment after installing:
a ``burn*`` requirement that the resolver took from a registry instead of the checkout shows up here as
a distribution without a ``file://`` origin under CHECKOUT.
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse


def origin(distribution: importlib.metadata.Distribution) -> Path | None:
    """Where a distribution was installed from, if it was a local path (editable or a local wheel)."""
    text = distribution.read_text("direct_url.json")
    if not text:
        return None
    url = urlparse(json.loads(text)["url"])
    return Path(unquote(url.path)).resolve() if url.scheme == "file" else None


def main(checkout: Path) -> int:
    checkout = checkout.resolve()
    problems = []
    found = []
    for distribution in importlib.metadata.distributions():
        name = distribution.metadata["Name"].lower().replace("_", "-")
        if name != "burn" and not name.startswith("burn-"):
            continue
        found.append(name)
        where = origin(distribution)
        if where is None or not where.is_relative_to(checkout):
            problems.append(
                f"{name} {distribution.version} came from {where or 'a registry'}, not {checkout}"
            )
    if problems:
        print("burn packages must be installed from the checkout:", *problems, sep="\n  ", file=sys.stderr)
        return 1
    print(f"installed from the checkout: {', '.join(sorted(found))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
