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
from ._gru import BiGru as BiGru
from ._gru import BiGruConfig as BiGruConfig
from ._gru import Gru as Gru
from ._gru import GruConfig as GruConfig
from ._lstm import BiLstm as BiLstm
from ._lstm import BiLstmConfig as BiLstmConfig
from ._lstm import Lstm as Lstm
from ._lstm import LstmConfig as LstmConfig
from ._lstm import LstmState as LstmState
from ._rnn import BiRnn as BiRnn
from ._rnn import BiRnnConfig as BiRnnConfig
from ._rnn import GateController as GateController
from ._rnn import Rnn as Rnn
from ._rnn import RnnConfig as RnnConfig
from ._rnn import RnnState as RnnState
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
    "Rnn",
    "RnnConfig",
    "RnnState",
    "BiRnn",
    "BiRnnConfig",
    "Lstm",
    "LstmConfig",
    "LstmState",
    "BiLstm",
    "BiLstmConfig",
    "Gru",
    "GruConfig",
    "BiGru",
    "BiGruConfig",
    "GateController",
    # == end: recurrent layers ==
]
