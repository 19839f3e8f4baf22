"""Every code example of the documentation runs: the ``python`` and ``pycon`` blocks of ``docs/**/*.md``,
of each ``packages/*/README.md`` (shown on the site's package pages) and of the root README.

The convention the pages follow:

- The blocks of one page run top to bottom in one namespace, as a chapter reads: later blocks use what
  earlier ones defined. Each page runs in a fresh subprocess (``tools/docs/run_page.py``) whose working
  directory is a fresh temporary folder, so files a page writes go nowhere else; ``BURN_DEVICE`` is
  ``ndarray``. One test per page; a failure names the page, the first line of the failing block, and
  shows the traceback, whose frames point at the page's own lines.
- ``pycon`` blocks (``>>>`` prompts) are checked as doctests, in the same namespace (with ``ELLIPSIS``
  and ``NORMALIZE_WHITESPACE``).
- A block whose first line is ``# requires: cuda`` (or ``onnx``, ``torch``; several are separated by
  commas) is skipped where that is missing: ``cuda`` an NVIDIA GPU that CuPy sees, ``onnx`` the onnx
  and onnxruntime packages, ``torch`` PyTorch.
- A page whose examples start from files a test of its own makes first is listed in
  ``EXECUTED_ELSEWHERE`` with that test, which runs them instead.
- Code that is not meant to run (shell commands, output, file layouts, pseudo-code) is tagged ``bash``,
  ``text``, ``console``, ``toml``..., never ``python``; ``test_every_code_block_is_tagged_to_run_or_not``
  rejects tags such as ``py`` that would silently not run.

Run one page: ``python -m pytest tests/test_docs_examples.py -k guide/model``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN_PAGE = ROOT / "tools" / "docs" / "run_page.py"
PAGE_TIMEOUT_S = float(os.environ.get("BURN_DOCS_PAGE_TIMEOUT", "600"))
OUTPUT_TAIL = 6000  # characters of a failing page's output shown with its traceback

RUN_LANGS = ("python", "pycon")
# Tags that look like Python but would not run: a page must say `python` (runs) or `text` (does not).
MISLEADING_LANGS = ("py", "py3", "python3", "ipython", "ipython3", "pyi", "doctest")
REQUIREMENTS = ("cuda", "onnx", "torch")
# Pages whose examples start from files a test of their own makes first: that test runs them instead.
EXECUTED_ELSEWHERE = {
    "packages/import/README.md": "packages/import/tests/test_readme.py",  # an ONNX model to import
}
REQUIRES = re.compile(r"#\s*requires:\s*(?P<names>.*)$")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\n]*)$")


class DocsExampleError(Exception):
    """A page's code blocks cannot be run as written (a bad fence, an unknown requirement)."""


@dataclass(frozen=True)
class Block:
    """One fenced code block: its tag (``lang``), the line of its first code line, its dedented code."""

    lang: str
    line: int
    code: str

    @property
    def requires(self) -> tuple[str, ...]:
        """The names of a first line ``# requires: a, b``; empty without one."""
        first = self.code.lstrip("\n").split("\n", 1)[0].strip()
        match = REQUIRES.fullmatch(first)
        if match is None:
            return ()
        return tuple(name.strip() for name in match["names"].split(",") if name.strip())


@dataclass(frozen=True)
class PageResult:
    """What running a page gave: the blocks that ran and passed, the skipped ones, the failure."""

    ran: int
    skipped: list[tuple[Block, str]]
    failed_line: int | None
    error: str
    output: str


def parse_blocks(markdown: str, where: str = "<markdown>") -> list[Block]:
    """Every fenced code block of ``markdown``, indented ones (in lists, admonitions) included.

    Args:
        markdown: the page's text.
        where: the page's name, for errors.

    Returns:
        The blocks, in page order, with their tag lower-cased (first word of the info string).

    Raises:
        DocsExampleError: a fence is never closed.
    """
    blocks = []
    lines = markdown.split("\n")
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, fence, info = len(opening["indent"]), opening["fence"], opening["info"].strip()
        words = info.lstrip("{.").split()
        lang = words[0].lower().rstrip("}") if words else ""
        start = index + 1
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$")
        end = start
        while end < len(lines) and closing.match(lines[end]) is None:
            end += 1
        if end == len(lines):
            raise DocsExampleError(f"{where}:{index + 1}: the code fence {fence!r} is never closed")
        body = [line[indent:] if line[:indent].strip() == "" else line.lstrip() for line in lines[start:end]]
        blocks.append(Block(lang=lang, line=start + 1, code=textwrap.dedent("\n".join(body))))
        index = end + 1
    return blocks


@functools.cache
def cuda_available() -> bool:
    """Whether burn-cuda is installed and CuPy sees an NVIDIA GPU (asked in a subprocess, so that this
    process never initializes CUDA)."""
    if importlib.util.find_spec("cupy") is None or importlib.util.find_spec("burn_cuda") is None:
        return False
    probe = "import cupy; print(cupy.cuda.runtime.getDeviceCount())"
    try:
        answer = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
        )
    except subprocess.TimeoutExpired:
        return False
    return answer.returncode == 0 and answer.stdout.strip().isdigit() and int(answer.stdout) > 0


def available_requirements() -> dict[str, bool]:
    """Which requirements a ``# requires:`` line may name are met on this machine."""
    found = importlib.util.find_spec
    return {
        "cuda": cuda_available(),
        "onnx": found("onnx") is not None and found("onnxruntime") is not None,
        "torch": found("torch") is not None,
    }


def run_page(
    path: Path,
    workdir: Path,
    *,
    markdown: str | None = None,
    available: Mapping[str, bool] | None = None,
    timeout: float = PAGE_TIMEOUT_S,
) -> PageResult:
    """Run the ``python`` and ``pycon`` blocks of one page in a fresh subprocess working in ``workdir``.

    Args:
        path: the Markdown file (tracebacks name it).
        workdir: an empty folder, the page's working directory.
        markdown: the page's text, if not the file's.
        available: which requirements are met (default: this machine's).
        timeout: seconds the page may take.

    Returns:
        The outcome; ``failed_line`` is ``None`` when every block that ran passed.

    Raises:
        DocsExampleError: a fence is never closed, or a block requires something unknown.
    """
    text = path.read_text() if markdown is None else markdown
    where = display_name(path)
    met = available_requirements() if available is None else available
    to_run, skipped = [], []
    for block in parse_blocks(text, where):
        if block.lang not in RUN_LANGS:
            continue
        unknown = [name for name in block.requires if name not in REQUIREMENTS]
        if unknown:
            raise DocsExampleError(
                f"{where}:{block.line}: '# requires:' names {unknown}; "
                f"known requirements: {list(REQUIREMENTS)}"
            )
        missing = [name for name in block.requires if not met.get(name, False)]
        if missing:
            skipped.append((block, ", ".join(missing)))
        else:
            to_run.append(block)
    if not to_run:
        return PageResult(ran=0, skipped=skipped, failed_line=None, error="", output="")
    blocks_file, result_file = workdir / ".blocks.json", workdir / ".result.json"
    payload = {"path": str(path), "blocks": [vars(block) for block in to_run]}
    blocks_file.write_text(json.dumps(payload))
    env = {**os.environ, "BURN_DEVICE": "ndarray", "PYTHONUNBUFFERED": "1"}
    command = [sys.executable, str(RUN_PAGE), str(blocks_file), str(result_file)]
    try:
        process = subprocess.run(
            command, cwd=workdir, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as expired:
        output = _text(expired.stdout) + _text(expired.stderr)
        started = re.findall(r"block at line (\d+) ---", output)
        line = int(started[-1]) if started else to_run[0].line
        error = f"the page did not finish within {timeout:.0f} s (BURN_DOCS_PAGE_TIMEOUT)"
        return PageResult(ran=0, skipped=skipped, failed_line=line, error=error, output=output)
    output = process.stdout + process.stderr
    if not result_file.exists():  # the interpreter died (a crash, os._exit) before reporting
        started = re.findall(r"block at line (\d+) ---", output)
        line = int(started[-1]) if started else to_run[0].line
        error = f"the page's process exited with status {process.returncode} without a result"
        return PageResult(ran=0, skipped=skipped, failed_line=line, error=error, output=output)
    result = json.loads(result_file.read_text())
    failed = result["failed"]
    if failed is None:
        return PageResult(ran=result["ran"], skipped=skipped, failed_line=None, error="", output=output)
    return PageResult(
        ran=result["ran"], skipped=skipped, failed_line=failed["line"], error=failed["error"], output=output
    )


def _text(stream: str | bytes | None) -> str:
    if stream is None:
        return ""
    return stream.decode(errors="replace") if isinstance(stream, bytes) else stream


def display_name(path: Path) -> str:
    """``path`` relative to the checkout where it is inside it."""
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def failure_message(path: Path, result: PageResult, markdown: str | None = None) -> str:
    """The message of a failed page: where, which block, the traceback and the output's tail."""
    assert result.failed_line is not None
    lines = (path.read_text() if markdown is None else markdown).split("\n")
    first = lines[result.failed_line - 1].strip() if result.failed_line <= len(lines) else ""
    where = display_name(path)
    output = result.output[-OUTPUT_TAIL:]
    return (
        f"{where}: the code block starting at line {result.failed_line} ({first!r}) failed "
        f"after {result.ran} block(s) of the page passed.\n\n{result.error.rstrip()}\n\n"
        f"--- the page's output (last {OUTPUT_TAIL} characters) ---\n{output.rstrip()}\n\n"
        f"Rerun this page alone: python -m pytest tests/test_docs_examples.py -k '{where}'"
    )


def documentation_pages() -> list[Path]:
    """The pages whose examples run: the root README, each package's README, every page under docs/."""
    pages = [ROOT / "README.md", *sorted((ROOT / "packages").glob("*/README.md"))]
    pages += sorted((ROOT / "docs").rglob("*.md"))
    return [page for page in pages if page.is_file()]


def _has_examples(page: Path) -> bool:
    try:
        return any(block.lang in RUN_LANGS for block in parse_blocks(page.read_text(), display_name(page)))
    except DocsExampleError:
        return True  # its test reports the bad fence


PAGES_WITH_EXAMPLES = [
    page
    for page in documentation_pages()
    if _has_examples(page) and display_name(page) not in EXECUTED_ELSEWHERE
]


@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES, ids=display_name)
def test_the_examples_of_the_page_run(page: Path, tmp_path: Path) -> None:
    result = run_page(page, tmp_path)
    if result.failed_line is not None:
        pytest.fail(failure_message(page, result), pytrace=False)
    if result.ran == 0:
        reasons = sorted({reason for _, reason in result.skipped})
        pytest.skip(f"{display_name(page)}: every block requires what is missing here ({', '.join(reasons)})")


def test_every_code_block_is_tagged_to_run_or_not() -> None:
    problems = []
    for page in documentation_pages():
        where = display_name(page)
        try:
            blocks = parse_blocks(page.read_text(), where)
        except DocsExampleError as error:
            problems.append(str(error))
            continue
        for block in blocks:
            if block.lang in MISLEADING_LANGS:
                problems.append(
                    f"{where}:{block.line}: a block tagged {block.lang!r} is never run; tag it 'python' "
                    "(it runs) or 'text' (it does not)"
                )
            elif block.lang == "python" and re.search(r"^>>> ", block.code, re.MULTILINE):
                problems.append(f"{where}:{block.line}: a 'python' block with '>>>' prompts: tag it 'pycon'")
            elif block.lang == "pycon" and ">>>" not in block.code:
                problems.append(f"{where}:{block.line}: a 'pycon' block without '>>>' prompts checks nothing")
    assert not problems, "\n".join(problems)


def test_pages_executed_elsewhere_are_executed_there() -> None:
    for page, test in EXECUTED_ELSEWHERE.items():
        assert (ROOT / page).is_file(), f"EXECUTED_ELSEWHERE names {page}, which does not exist"
        assert "README.md" in (ROOT / test).read_text(), f"{test} does not read {page}"


def test_the_documentation_has_examples() -> None:
    # Guards the collection itself: a broken glob or parser would make every page test vanish.
    names = {display_name(page) for page in PAGES_WITH_EXAMPLES}
    assert "README.md" in names
    assert any(name.startswith("docs/") for name in names)


# The runner's own tests: synthetic pages, each run as a real page would be.

PAGE = """\
# A page

Some prose.

```python
x = 20
```

```bash
this is not python and never runs
```

1. In a list:

    ```python
    y = x + 1
    ```

```python
def helper():
    raise ValueError(f"boom {y}")

helper()
```

```python
never = "reached"
```
"""


def test_the_parser_finds_blocks_with_their_lines_and_tags() -> None:
    blocks = parse_blocks(PAGE)
    assert [(block.lang, block.line) for block in blocks] == [
        ("python", 6),
        ("bash", 10),
        ("python", 16),
        ("python", 20),
        ("python", 27),
    ]
    assert blocks[2].code == "y = x + 1"  # dedented out of the list item
    with pytest.raises(DocsExampleError, match=r"page.md:3: the code fence '```' is never closed"):
        parse_blocks("text\n\n```python\nx = 1\n", "page.md")


def test_a_failing_block_is_reported_with_its_page_line_and_traceback(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    workdir = tmp_path / "work"
    workdir.mkdir()
    result = run_page(page, workdir, available={})
    assert result.failed_line == 20
    assert result.ran == 2  # the first two python blocks passed, sharing ``x``
    assert "ValueError: boom 21" in result.error
    # the frames point at the page's lines: the call (line 23) and the raise (line 21)
    assert f'File "{page}", line 23' in result.error
    assert f'File "{page}", line 21, in helper' in result.error
    message = failure_message(page, result)
    assert "the code block starting at line 20 ('def helper():') failed" in message
    assert "never" not in result.output  # the run stopped at the failure


def test_pages_share_nothing_but_blocks_of_a_page_share_a_namespace_and_folder(tmp_path: Path) -> None:
    writer = textwrap.dedent(
        """\
        ```python
        from __future__ import annotations

        import os
        from pathlib import Path

        Path("note.txt").write_text("kept")
        Path("helper.py").write_text("VALUE = 3")
        assert os.environ["BURN_DEVICE"] == "ndarray"
        ```

        ```python
        from dataclasses import dataclass

        import helper  # the working directory imports, as a script's own folder does


        @dataclass
        class Point:
            x: int


        def later(x: NotDefinedYet) -> None:  # postponed annotations, from the first block's import
            pass


        assert Path("note.txt").read_text() == "kept"
        assert Point(1).x == 1
        assert helper.VALUE == 3
        ```
        """
    )
    reader = '```python\nfrom pathlib import Path\nassert not Path("note.txt").exists()\n```\n'
    for name, text in [("writer.md", writer), ("reader.md", reader)]:
        (tmp_path / name).write_text(text)
        workdir = tmp_path / f"work-{name}"
        workdir.mkdir()
        result = run_page(tmp_path / name, workdir, available={})
        assert result.failed_line is None, result.error
    assert (tmp_path / "work-writer.md" / "note.txt").exists()
    assert not (ROOT / "note.txt").exists()


def test_requires_skips_what_is_missing_and_rejects_unknown_names(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    gpu_block = '```python\n# requires: cuda\nraise RuntimeError("ran without a GPU")\n```\n'
    text = gpu_block + "\n```python\nz = 1\n```\n"
    page.write_text(text)
    result = run_page(page, tmp_path, available={"cuda": False})
    assert (result.failed_line, result.ran) == (None, 1)
    assert [(block.line, reason) for block, reason in result.skipped] == [(2, "cuda")]
    failing = run_page(page, tmp_path, available={"cuda": True})
    assert failing.failed_line == 2
    assert "RuntimeError: ran without a GPU" in failing.error
    page.write_text("```python\n# requires: cuda, tpu\nx = 1\n```\n")
    with pytest.raises(DocsExampleError, match=r"page.md:2: '# requires:' names \['tpu'\]"):
        run_page(page, tmp_path, available={})


def test_pycon_blocks_are_checked_as_doctests(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```python\nvalue = 2\n```\n\n```pycon\n>>> value + 1\n3\n>>> value * 10\n21\n```\n")
    result = run_page(page, tmp_path, available={})
    assert result.failed_line == 6
    assert "value * 10" in result.error
    assert "Expected:\n    21\nGot:\n    20" in result.error
    assert "value + 1" not in result.error  # the passing example is not reported


def test_a_page_that_hangs_is_stopped_and_named(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```python\nx = 1\n```\n\n```python\nimport time\ntime.sleep(60)\n```\n")
    result = run_page(page, tmp_path, available={}, timeout=5)
    assert result.failed_line == 6
    assert "did not finish within 5 s" in result.error
