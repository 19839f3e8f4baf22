"""mkdocs hook: each page under docs/packages/ shows its package's README, the one source of that text."""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[2]


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    source = Path(page.file.src_uri)
    if source.parent.name != "packages":
        return markdown
    readme = ROOT / "packages" / source.stem / "README.md"
    return readme.read_text() + "\n" + markdown
