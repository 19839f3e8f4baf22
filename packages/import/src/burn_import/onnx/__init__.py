"""Import of ONNX models: ``load`` runs a model as a ``Module`` on any backend; ``generate`` writes
Python source for it; ``read_model`` gives the IR both start from.

Needs the ``onnx`` package: ``pip install 'burn-import[onnx]'``.
"""

from ._codegen import ModelGen as ModelGen
from ._codegen import generate as generate
from ._errors import OnnxImportError as OnnxImportError
from ._errors import UnsupportedModelError as UnsupportedModelError
from ._ir import Graph as Graph
from ._ir import Node as Node
from ._ir import ValueType as ValueType
from ._limits import OnnxLimits as OnnxLimits
from ._reader import read_model as read_model
from ._runtime import OnnxModel as OnnxModel
from ._runtime import load as load
from ._runtime import run_op as run_op
from .ops import supported_ops as supported_ops

__all__ = [
    "load",
    "OnnxModel",
    "generate",
    "ModelGen",
    "run_op",
    "read_model",
    "supported_ops",
    "Graph",
    "Node",
    "ValueType",
    "OnnxLimits",
    "OnnxImportError",
    "UnsupportedModelError",
]
