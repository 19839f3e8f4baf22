"""Import ONNX models and PyTorch or safetensors weights into Burn for Python.

- ``burn_import.onnx``: ONNX models run as modules (``load``) or turned into Python source
  (``generate``); needs ``burn-import[onnx]``.
- ``burn_import.pytorch``: ``.pt``/``.pth`` weights read without PyTorch, loaded by name with adapters.
- ``burn_import.safetensors``: safetensors files both ways.
"""

from ._adapt import LoadError as LoadError
from ._adapt import LoadResult as LoadResult
from ._adapt import load_state_dict as load_state_dict
from ._version import __version__ as __version__

__all__ = ["LoadError", "LoadResult", "load_state_dict"]
