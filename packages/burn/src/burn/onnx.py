"""ONNX models: ``burn_import.onnx``.

Needs the ``import`` extra: ``pip install 'burn-py[import]'``.
"""

try:
    from burn_import.onnx import *  # noqa: F403
    from burn_import.onnx import __all__ as __all__
except ModuleNotFoundError as error:
    from ._reexport import raise_missing_extra

    raise_missing_extra(error, "burn_import.onnx", "import", __name__)
