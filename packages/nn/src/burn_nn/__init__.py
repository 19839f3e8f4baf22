"""Modules, layers, losses, optimizers and schedulers for Burn for Python.

``Module``, ``Param`` and ``Config`` are the building blocks; layers come as a ``XConfig`` (a ``Config``
whose ``init(device)`` builds the layer) and the layer ``X``. Losses live in ``burn_nn.loss``,
optimizers and learning-rate schedulers in ``burn_nn.optim``.
"""

from ._config import Config as Config
from ._config import ConfigError as ConfigError
from ._config import variant as variant
from ._dropout import Dropout as Dropout
from ._dropout import DropoutConfig as DropoutConfig
from ._dropout import Identity as Identity
from ._initializer import Initializer as Initializer
from ._linear import Linear as Linear
from ._linear import LinearConfig as LinearConfig
from ._module import Module as Module
from ._module import ModuleMapper as ModuleMapper
from ._module import ModuleVisitor as ModuleVisitor
from ._module import ParamRecord as ParamRecord
from ._module import RecordError as RecordError
from ._module import is_training as is_training
from ._norm import LayerNorm as LayerNorm
from ._norm import LayerNormConfig as LayerNormConfig
from ._param import Param as Param
from ._param import ParamId as ParamId
from ._param import RunningState as RunningState
from ._version import __version__ as __version__

# == exports: conv, pooling, resampling, embedding ==
# == end: conv, pooling, resampling, embedding ==
# == exports: normalization and activation modules ==
# == end: normalization and activation modules ==
# == exports: attention, transformer, positional encodings ==
# == end: attention, transformer, positional encodings ==
# == exports: recurrent layers ==
# == end: recurrent layers ==

__all__ = [
    # building blocks
    "Module",
    "ModuleVisitor",
    "ModuleMapper",
    "Param",
    "ParamId",
    "RunningState",
    "ParamRecord",
    "RecordError",
    "Config",
    "ConfigError",
    "variant",
    "Initializer",
    "is_training",
    # layers
    "Linear",
    "LinearConfig",
    "Dropout",
    "DropoutConfig",
    "Identity",
    "LayerNorm",
    "LayerNormConfig",
    # == exports: conv, pooling, resampling, embedding ==
    # == end: conv, pooling, resampling, embedding ==
    # == exports: normalization and activation modules ==
    # == end: normalization and activation modules ==
    # == exports: attention, transformer, positional encodings ==
    # == end: attention, transformer, positional encodings ==
    # == exports: recurrent layers ==
    # == end: recurrent layers ==
]
