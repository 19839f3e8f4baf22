"""The errors of ONNX import."""

from __future__ import annotations

__all__ = ["OnnxImportError", "UnsupportedModelError"]


class OnnxImportError(ValueError):
    """A model cannot be read or run: the message names the node (its name, op type and opset), the
    shapes and dtypes involved, and what was expected."""


class UnsupportedModelError(OnnxImportError):
    """A model uses operators, attributes or dtypes this importer does not support; raised when the
    model is read, before anything runs.

    Attributes:
        problems: one line per offending node or value, such as
            ``"node 'n1' (Foo, opset 17): unsupported operator"``.
    """

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        shown = problems[:20]
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__(
            f"the model uses {len(problems)} unsupported feature(s):\n  " + "\n  ".join(shown) + more
        )
