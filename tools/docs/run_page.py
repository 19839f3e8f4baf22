"""Run the code blocks of one documentation page, in order, in one namespace (the child process of
``tests/test_docs_examples.py``).

Usage: ``python tools/docs/run_page.py BLOCKS.json RESULT.json``, in the working directory the page may
write to. ``BLOCKS.json`` holds ``{"path": <the Markdown file>, "blocks": [{"lang": "python" | "pycon",
"line": <line of the block's first code line>, "code": <the code>}]}``. The blocks run top to bottom in
the namespace of a module named ``__main__``, as a script's would. Each is compiled under the Markdown
file's name with its own line numbers, so a traceback points into the page. The first block that fails
stops the run; ``RESULT.json`` then holds ``{"ran": <blocks that passed>, "failed": {"line": <its first
line>, "error": <the traceback, or the doctest report>}}`` (``"failed": null`` when every block passed).
"""

from __future__ import annotations
import __future__

import doctest
import io
import json
import os
import sys
import traceback
import types
from pathlib import Path
from typing import Any

DOCTEST_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
FUTURE_FLAGS = 0
for _feature in __future__.all_feature_names:
    FUTURE_FLAGS |= getattr(__future__, _feature).compiler_flag


def run_python(code: str, path: str, line: int, namespace: dict[str, Any], futures: list[int]) -> str | None:
    """Execute one ``python`` block; returns the traceback (frames of the page and below) or ``None``.

    ``futures`` holds the ``from __future__`` flags of the page's earlier blocks: as in one script, an
    import such as ``from __future__ import annotations`` in a first block applies to the later ones.
    """
    # Padding with newlines makes the compiled line numbers those of the Markdown file.
    source = "\n" * (line - 1) + code
    try:
        compiled = compile(source, path, "exec", flags=futures[0], dont_inherit=True)
        futures[0] |= compiled.co_flags & FUTURE_FLAGS
        exec(compiled, namespace)
    except BaseException as error:
        frames = error.__traceback__
        # Drop this function's frame; the first frame left is the page's.
        if frames is not None and frames.tb_next is not None:
            frames = frames.tb_next
        return "".join(traceback.format_exception(type(error), error, frames))
    return None


def run_pycon(code: str, path: str, line: int, namespace: dict[str, Any], futures: list[int]) -> str | None:
    """Check one ``pycon`` block as a doctest; returns doctest's report of the failures or ``None``."""
    parser = doctest.DocTestParser()
    test = parser.get_doctest(code, namespace, Path(path).name, path, line - 1)
    report = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=DOCTEST_FLAGS)
    runner.run(test, out=report.write, clear_globs=False)
    return report.getvalue() if runner.failures else None


def main(blocks_file: str, result_file: str) -> int:
    """Run the page described by ``blocks_file``; write the outcome to ``result_file``."""
    spec = json.loads(Path(blocks_file).read_text())
    path = str(spec["path"])
    # As for code typed into a script or a REPL in the page's working directory: modules there import
    # (a page may write a package and import it), and this runner's own folder does not.
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [
        os.getcwd(),
        *(entry for entry in sys.path if entry and Path(entry).resolve() != Path(here)),
    ]
    page = types.ModuleType("__main__")
    page.__file__ = path
    # Classes a page defines name ``__main__`` as their module: dataclasses and typing.get_type_hints
    # look their annotations up there, so the page's namespace must be that module's.
    sys.modules["__main__"] = page
    namespace = page.__dict__
    futures = [0]
    ran = 0
    failed: dict[str, Any] | None = None
    for block in spec["blocks"]:
        print(f"--- {Path(path).name}, block at line {block['line']} ---", flush=True)
        run = run_pycon if block["lang"] == "pycon" else run_python
        error = run(block["code"], path, int(block["line"]), namespace, futures)
        sys.stdout.flush()
        sys.stderr.flush()
        if error is not None:
            failed = {"line": block["line"], "error": error}
            break
        ran += 1
    Path(result_file).write_text(json.dumps({"ran": ran, "failed": failed}))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
