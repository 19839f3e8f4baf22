"""Backend interface, tensor API and conformance suite of Burn for Python.

The user API is ``Tensor`` with ``DType``, ``Shape``, ``TensorData``, ``Distribution`` and devices; the
backend author's API is ``Backend`` (op groups ``FloatTensorOps``, ``IntTensorOps``, ``BoolTensorOps``,
``ModuleOps``, ``ActivationOps``, ``DistributedOps``, ``OptimizerOps``) and ``AutodiffBackend``. Activation
functions live in ``burn_backend.activation``, module functions (convolution, pooling, padding, ...) in
``burn_backend.module``, the FFTs, short-time transforms and window functions in ``burn_backend.signal``,
linear algebra (``det``, ``lu``, ``qr``, norms, ...) in ``burn_backend.linalg``, coordinate grids
(``meshgrid``) in ``burn_backend.grid``, collectives over devices (``all_reduce``) in
``burn_backend.distributed``, optimizer updates of many tensors in one call (``adam_step``) in
``burn_backend.optim``, the conformance suite in ``burn_backend.testing``.
The record vocabulary (``ParamId``, ``ParamRecord``, the ``Recorder`` protocol) is shared by burn-nn's
modules and burn-record's recorders. What backend implementations share (the interface listing,
canonical slices, output sizes of module ops, the entry-point group) is in ``burn_backend.kit``, a
module for backend authors.
"""

# the namespaces of functions, importable as attributes (``burn_backend.linalg.det``)
from . import activation as activation
from . import distributed as distributed
from . import grid as grid
from . import linalg as linalg
from . import module as module
from . import optim as optim
from . import signal as signal
from ._backend import AutodiffBackend as AutodiffBackend
from ._backend import Backend as Backend
from ._backend import DTypeUsage as DTypeUsage
from ._backend import Gradients as Gradients
from ._data import TensorData as TensorData
from ._data import Tolerance as Tolerance
from ._device import Device as Device
from ._distribution import Distribution as Distribution
from ._dtype import Bool as Bool
from ._dtype import DType as DType
from ._dtype import Float as Float
from ._dtype import Int as Int
from ._dtype import Kind as Kind
from ._gradient_watch import watch_gradients as watch_gradients
from ._ops._attention import AttentionBackward as AttentionBackward
from ._ops._norm import BatchNormTraining as BatchNormTraining
from ._ops._norm import NormBackward as NormBackward
from ._ops._rnn import RnnBackward as RnnBackward
from ._ops._rnn import RnnForward as RnnForward
from ._ops.activation import ActivationOps as ActivationOps
from ._ops.bool import BoolTensorOps as BoolTensorOps
from ._ops.distributed import DistributedOps as DistributedOps
from ._ops.distributed import ReduceOperation as ReduceOperation
from ._ops.float import FloatTensorOps as FloatTensorOps
from ._ops.int import IntTensorOps as IntTensorOps
from ._ops.module import DeformConv2dBackward as DeformConv2dBackward
from ._ops.module import ModuleOps as ModuleOps
from ._ops.optim import OptimizerOps as OptimizerOps
from ._options import AdamOptions as AdamOptions
from ._options import AttentionOptions as AttentionOptions
from ._options import ConvOptions as ConvOptions
from ._options import ConvTransposeOptions as ConvTransposeOptions
from ._options import DeformConvOptions as DeformConvOptions
from ._options import GridSampleOptions as GridSampleOptions
from ._options import IndexingUpdateOp as IndexingUpdateOp
from ._options import InterpolateMode as InterpolateMode
from ._options import InterpolateOptions as InterpolateOptions
from ._options import SgdOptions as SgdOptions
from ._options import UnfoldOptions as UnfoldOptions
from ._record import ParamId as ParamId
from ._record import ParamRecord as ParamRecord
from ._record import Recorder as Recorder
from ._registry import default_device as default_device
from ._registry import parse_device as parse_device
from ._registry import set_default_device as set_default_device
from ._shape import Shape as Shape
from ._slice import Slice as Slice
from ._tensor import Tensor as Tensor
from ._transaction import PendingRead as PendingRead
from ._transaction import Transaction as Transaction
from ._version import __version__ as __version__

__all__ = [
    # tensors
    "Tensor",
    "TensorData",
    "Transaction",
    "PendingRead",
    "Tolerance",
    "DType",
    "Kind",
    "Float",
    "Int",
    "Bool",
    "Shape",
    "Slice",
    "Distribution",
    # devices
    "Device",
    "default_device",
    "set_default_device",
    "parse_device",
    # records
    "ParamId",
    "ParamRecord",
    "Recorder",
    # the backend interface
    "Backend",
    "AutodiffBackend",
    "Gradients",
    "DTypeUsage",
    "FloatTensorOps",
    "IntTensorOps",
    "BoolTensorOps",
    "ModuleOps",
    "ActivationOps",
    "DistributedOps",
    "OptimizerOps",
    "ReduceOperation",
    "IndexingUpdateOp",
    # options of module ops
    "ConvOptions",
    "ConvTransposeOptions",
    "DeformConvOptions",
    "DeformConv2dBackward",
    "UnfoldOptions",
    "InterpolateMode",
    "InterpolateOptions",
    "AttentionOptions",
    "AttentionBackward",
    "NormBackward",
    "BatchNormTraining",
    "RnnBackward",
    "RnnForward",
    "GridSampleOptions",
    # settings of optimizer ops
    "AdamOptions",
    "SgdOptions",
]
