"""ONNX import: `burn_import.onnx`.

Needs the `import` extra: `pip install 'burn[import]'`.
"""

from ._reexport import reexport

reexport(globals(), "burn_import.onnx", "import")
