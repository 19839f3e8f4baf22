"""griffe extension for the API reference: a docstring's ``Example:`` section is read as ``Examples:``.

The packages' docstrings title their doctests ``Example:`` (singular). griffe's Google-style parser knows
only ``Examples:`` as an examples section and renders any other title as an admonition of Markdown
text, where ``>>> x[0]`` would become prose and ``[0]`` a broken cross-reference. Renaming the title
before the docstring is parsed makes every doctest a highlighted ``pycon`` block.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_SINGULAR_TITLE = re.compile(r"^(?P<indent>[ \t]*)Example:[ \t]*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename ``Example:`` section titles to ``Examples:`` in every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Rewrite ``obj``'s docstring before it is parsed."""
        docstring = obj.docstring
        if docstring is not None and "Example:" in docstring.value:
            docstring.value = _SINGULAR_TITLE.sub(r"\g<indent>Examples:", docstring.value)
