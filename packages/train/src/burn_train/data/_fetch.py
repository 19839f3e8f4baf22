"""Downloads kept in Burn's cache folder: a wheel fetched through a package index's simple API (PEP 503)
and checked against the SHA-256 the index publishes."""

from __future__ import annotations

import hashlib
import logging
import os
import urllib.parse
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

__all__ = ["cache_dir", "fetch_wheel", "index_url"]

_log = logging.getLogger("burn_train.data")


def cache_dir() -> Path:
    """Where downloads are kept: ``$BURN_CACHE_DIR``, else ``$XDG_CACHE_HOME/burn``, else
    ``~/.cache/burn``."""
    if os.environ.get("BURN_CACHE_DIR"):
        return Path(os.environ["BURN_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "burn"


def index_url() -> str:
    """The package index pip or uv is configured with (``PIP_INDEX_URL``, ``UV_INDEX_URL``,
    ``UV_DEFAULT_INDEX``), else PyPI's simple index."""
    for variable in ("PIP_INDEX_URL", "UV_INDEX_URL", "UV_DEFAULT_INDEX"):
        if os.environ.get(variable):
            return os.environ[variable].rstrip("/")
    return "https://pypi.org/simple"


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs += [value for name, value in attrs if name == "href" and value]


def fetch_wheel(project: str, wheel: str) -> Path:
    """The path of ``wheel`` (a file name) of ``project`` in the cache folder, downloaded through the
    package index the first time, and checked against the SHA-256 the index publishes with the link.

    Raises:
        RuntimeError: the index does not list the wheel, publishes no digest, or the download does not
            match it.
        OSError: the index cannot be reached.
    """
    target = cache_dir() / wheel
    if target.exists():
        return target
    page = f"{index_url()}/{project}/"
    print(f"Downloading {wheel} from {index_url()} (once) into {target.parent}", flush=True)
    _log.info("downloading %s from %s", wheel, page)
    with urllib.request.urlopen(page, timeout=60) as response:
        links = _Links()
        links.feed(response.read().decode("utf-8", errors="replace"))
    href = next((h for h in links.hrefs if urllib.parse.urlsplit(h).path.endswith("/" + wheel)), None)
    if href is None:
        raise RuntimeError(f"fetch_wheel: the package index at {index_url()} does not list {wheel}")
    url, _, fragment = urllib.parse.urljoin(page, href).partition("#")
    expected = urllib.parse.parse_qs(fragment).get("sha256", [""])[0]
    if not expected:
        raise RuntimeError(f"fetch_wheel: the index publishes no SHA-256 for {wheel}; refusing the file")
    with urllib.request.urlopen(url, timeout=120) as response:
        payload = response.read()
    if hashlib.sha256(payload).hexdigest() != expected:
        raise RuntimeError(f"fetch_wheel: {wheel}: the download does not match the SHA-256 {expected}")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".{os.getpid()}.part")
    partial.write_bytes(payload)
    os.replace(partial, target)  # never a half-written wheel at the final name
    return target
