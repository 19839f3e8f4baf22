"""ONNX operator implementations over burn tensors, one module per family; importing this package
fills ``REGISTRY``."""

from . import _activation as _activation
from . import _attention as _attention
from . import _cast as _cast
from . import _control as _control
from . import _conv as _conv
from . import _elementwise as _elementwise
from . import _grid as _grid
from . import _index as _index
from . import _linalg as _linalg
from . import _norm as _norm
from . import _pool as _pool
from . import _quant as _quant
from . import _reduce as _reduce
from . import _resize as _resize
from . import _rnn as _rnn
from . import _shape as _shape
from . import _training as _training
from ._registry import REGISTRY as REGISTRY
from ._registry import OpSpec as OpSpec

__all__ = ["REGISTRY", "OpSpec", "supported_ops"]


def supported_ops() -> list[str]:
    """The names of the operators this importer runs (``domain.op_type`` outside the default domain)."""
    return sorted(op if not domain else f"{domain}.{op}" for domain, op in REGISTRY)
