"""``python -m burn_import.onnx model.onnx --out DIR``: generate a module's source and weights."""

from __future__ import annotations

import argparse
import sys

from ._codegen import generate


def main(argv: list[str] | None = None) -> int:
    """The command line: writes ``DIR/<name>.py`` and ``DIR/<name>.mpk``, prints their paths."""
    parser = argparse.ArgumentParser(prog="python -m burn_import.onnx", description=__doc__)
    parser.add_argument("model", help="the .onnx file")
    parser.add_argument("--out", required=True, help="the folder to write the source and weights into")
    parser.add_argument("--name", default=None, help="the file stem (default: the model's)")
    parser.add_argument("--class-name", default="Model", help="the generated Module class's name")
    args = parser.parse_args(argv)
    source, weights = generate(args.model, args.out, name=args.name, class_name=args.class_name)
    print(f"source:  {source}")
    print(f"weights: {weights}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
