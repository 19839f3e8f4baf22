"""Import ONNX models and PyTorch or safetensors weights into Burn for Python.

- ``burn_import.onnx``: ONNX models run as modules (``load``) or turned into Python source
  (``generate``); needs ``burn-import[onnx]``.
- ``burn_import.pytorch``: ``.pt``/``.pth`` weights read without PyTorch, loaded by name with adapters.
- ``burn_import.safetensors``: safetensors files both ways.
- ``PyTorchFileRecorder``, ``SafetensorsFileRecorder``, ``LoadArgs``: Burn's recorders for those files.
"""

from ._adapt import LoadError as LoadError
from ._adapt import LoadResult as LoadResult
from ._adapt import load_state_dict as load_state_dict
from ._recorder import LoadArgs as LoadArgs
from ._recorder import PyTorchFileRecorder as PyTorchFileRecorder
from ._recorder import SafetensorsFileRecorder as SafetensorsFileRecorder
from ._version import __version__ as __version__

__all__ = [
    "LoadArgs",
    "LoadError",
    "LoadResult",
    "PyTorchFileRecorder",
    "SafetensorsFileRecorder",
    "load_state_dict",
]
