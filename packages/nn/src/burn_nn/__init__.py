"""Modules, layers, losses, optimizers and schedulers for Burn for Python.

``Module``, ``Param`` and ``Config`` are the building blocks; layers come as a ``XConfig`` (a ``Config``
whose ``init(device)`` builds the layer) and the layer ``X``. Losses live in ``burn_nn.loss``, the
functional forms (``pad``, ``dropout``, ``batch_norm``, ``cross_entropy``, ...) in ``burn_nn.functional``,
optimizers and learning-rate schedulers in ``burn_nn.optim``. ``ParamId``, ``ParamRecord`` and the
``Recorder`` protocol are backend-core's record vocabulary, re-exported: ``Module.save_file`` and
``Module.load_file`` take any recorder (burn-record has them); ``rng_record`` and ``load_rng_record``
record random generators (a device's, NumPy's) for exact resumes.
"""

from burn_backend import ParamId as ParamId
from burn_backend import ParamRecord as ParamRecord
from burn_backend import Recorder as Recorder

from . import functional as functional
from . import loss as loss
from ._activation import GLU as GLU
from ._activation import Activation as Activation
from ._activation import ActivationConfig as ActivationConfig
from ._activation import Celu as Celu
from ._activation import CeluConfig as CeluConfig
from ._activation import Elu as Elu
from ._activation import EluConfig as EluConfig
from ._activation import Gelu as Gelu
from ._activation import GeluApproximate as GeluApproximate
from ._activation import HardShrink as HardShrink
from ._activation import HardShrinkConfig as HardShrinkConfig
from ._activation import HardSigmoid as HardSigmoid
from ._activation import HardSigmoidConfig as HardSigmoidConfig
from ._activation import HardSwish as HardSwish
from ._activation import Hardtanh as Hardtanh
from ._activation import HardtanhConfig as HardtanhConfig
from ._activation import LeakyRelu as LeakyRelu
from ._activation import LeakyReluConfig as LeakyReluConfig
from ._activation import LogSigmoid as LogSigmoid
from ._activation import LogSoftmax as LogSoftmax
from ._activation import Mish as Mish
from ._activation import PRelu as PRelu
from ._activation import PReluConfig as PReluConfig
from ._activation import QuietSoftmax as QuietSoftmax
from ._activation import Relu as Relu
from ._activation import Relu6 as Relu6
from ._activation import RRelu as RRelu
from ._activation import RReluConfig as RReluConfig
from ._activation import Selu as Selu
from ._activation import Shrink as Shrink
from ._activation import ShrinkConfig as ShrinkConfig
from ._activation import Sigmoid as Sigmoid
from ._activation import SiLU as SiLU
from ._activation import Softmax as Softmax
from ._activation import Softmin as Softmin
from ._activation import Softplus as Softplus
from ._activation import SoftplusConfig as SoftplusConfig
from ._activation import SoftShrink as SoftShrink
from ._activation import SoftShrinkConfig as SoftShrinkConfig
from ._activation import Softsign as Softsign
from ._activation import SwiGlu as SwiGlu
from ._activation import SwiGluConfig as SwiGluConfig
from ._activation import Tanh as Tanh
from ._activation import Tanhshrink as Tanhshrink
from ._activation import Threshold as Threshold
from ._activation import ThresholdConfig as ThresholdConfig
from ._activation import ThresholdedRelu as ThresholdedRelu
from ._activation import ThresholdedReluConfig as ThresholdedReluConfig
from ._attention import MhaCache as MhaCache
from ._attention import MhaInput as MhaInput
from ._attention import MhaOutput as MhaOutput
from ._attention import MultiHeadAttention as MultiHeadAttention
from ._attention import MultiHeadAttentionConfig as MultiHeadAttentionConfig
from ._config import Config as Config
from ._config import ConfigError as ConfigError
from ._config import variant as variant
from ._conv import Conv1d as Conv1d
from ._conv import Conv1dConfig as Conv1dConfig
from ._conv import Conv2d as Conv2d
from ._conv import Conv2dConfig as Conv2dConfig
from ._conv import Conv3d as Conv3d
from ._conv import Conv3dConfig as Conv3dConfig
from ._conv import ConvTranspose1d as ConvTranspose1d
from ._conv import ConvTranspose1dConfig as ConvTranspose1dConfig
from ._conv import ConvTranspose2d as ConvTranspose2d
from ._conv import ConvTranspose2dConfig as ConvTranspose2dConfig
from ._conv import ConvTranspose3d as ConvTranspose3d
from ._conv import ConvTranspose3dConfig as ConvTranspose3dConfig
from ._dropout import Dropout as Dropout
from ._dropout import DropoutConfig as DropoutConfig
from ._dropout import Identity as Identity
from ._embedding import Embedding as Embedding
from ._embedding import EmbeddingConfig as EmbeddingConfig
from ._gptq import quantize_weights_gptq as quantize_weights_gptq
from ._gru import BiGru as BiGru
from ._gru import BiGruConfig as BiGruConfig
from ._gru import Gru as Gru
from ._gru import GruConfig as GruConfig
from ._initializer import Initializer as Initializer
from ._linear import Linear as Linear
from ._linear import LinearConfig as LinearConfig
from ._lora import LoraConfig as LoraConfig
from ._lora import LoraLinear as LoraLinear
from ._lora import lora_adapters as lora_adapters
from ._lstm import BiLstm as BiLstm
from ._lstm import BiLstmConfig as BiLstmConfig
from ._lstm import Lstm as Lstm
from ._lstm import LstmConfig as LstmConfig
from ._lstm import LstmState as LstmState
from ._masks import GeneratePaddingMask as GeneratePaddingMask
from ._masks import SeqLengthOption as SeqLengthOption
from ._masks import generate_autoregressive_mask as generate_autoregressive_mask
from ._masks import generate_padding_mask as generate_padding_mask
from ._module import LoadResult as LoadResult
from ._module import Module as Module
from ._module import ModuleMapper as ModuleMapper
from ._module import ModuleVisitor as ModuleVisitor
from ._module import RecordError as RecordError
from ._module import is_training as is_training
from ._norm import BatchNorm as BatchNorm
from ._norm import BatchNormConfig as BatchNormConfig
from ._norm import GroupNorm as GroupNorm
from ._norm import GroupNormConfig as GroupNormConfig
from ._norm import InstanceNorm as InstanceNorm
from ._norm import InstanceNormConfig as InstanceNormConfig
from ._norm import LayerNorm as LayerNorm
from ._norm import LayerNormConfig as LayerNormConfig
from ._norm import NormalizationConfig as NormalizationConfig
from ._norm import RmsNorm as RmsNorm
from ._norm import RmsNormConfig as RmsNormConfig
from ._padding import PaddingConfig1d as PaddingConfig1d
from ._padding import PaddingConfig2d as PaddingConfig2d
from ._padding import PaddingConfig3d as PaddingConfig3d
from ._param import Param as Param
from ._param import RunningState as RunningState
from ._param_groups import ParamGroup as ParamGroup
from ._param_groups import ParamGroupError as ParamGroupError
from ._pool import AdaptiveAvgPool1d as AdaptiveAvgPool1d
from ._pool import AdaptiveAvgPool1dConfig as AdaptiveAvgPool1dConfig
from ._pool import AdaptiveAvgPool2d as AdaptiveAvgPool2d
from ._pool import AdaptiveAvgPool2dConfig as AdaptiveAvgPool2dConfig
from ._pool import AvgPool1d as AvgPool1d
from ._pool import AvgPool1dConfig as AvgPool1dConfig
from ._pool import AvgPool2d as AvgPool2d
from ._pool import AvgPool2dConfig as AvgPool2dConfig
from ._pool import MaxPool1d as MaxPool1d
from ._pool import MaxPool1dConfig as MaxPool1dConfig
from ._pool import MaxPool2d as MaxPool2d
from ._pool import MaxPool2dConfig as MaxPool2dConfig
from ._positional import PositionalEncoding as PositionalEncoding
from ._positional import PositionalEncodingConfig as PositionalEncodingConfig
from ._positional import RotaryEncoding as RotaryEncoding
from ._positional import RotaryEncodingConfig as RotaryEncodingConfig
from ._positional import generate_sinusoids as generate_sinusoids
from ._quantize import Calibration as Calibration
from ._quantize import Quantizer as Quantizer
from ._resample import Interpolate1d as Interpolate1d
from ._resample import Interpolate1dConfig as Interpolate1dConfig
from ._resample import Interpolate2d as Interpolate2d
from ._resample import Interpolate2dConfig as Interpolate2dConfig
from ._resample import InterpolateMode as InterpolateMode
from ._resample import PixelShuffle as PixelShuffle
from ._resample import PixelShuffleConfig as PixelShuffleConfig
from ._resample import PixelUnshuffle as PixelUnshuffle
from ._resample import PixelUnshuffleConfig as PixelUnshuffleConfig
from ._resample import Unfold4d as Unfold4d
from ._resample import Unfold4dConfig as Unfold4dConfig
from ._rng import RngRecord as RngRecord
from ._rng import load_rng_record as load_rng_record
from ._rng import rng_record as rng_record
from ._rnn import BiRnn as BiRnn
from ._rnn import BiRnnConfig as BiRnnConfig
from ._rnn import GateController as GateController
from ._rnn import Rnn as Rnn
from ._rnn import RnnConfig as RnnConfig
from ._rnn import RnnState as RnnState
from ._transformer import PositionWiseFeedForward as PositionWiseFeedForward
from ._transformer import PositionWiseFeedForwardConfig as PositionWiseFeedForwardConfig
from ._transformer import TransformerDecoder as TransformerDecoder
from ._transformer import TransformerDecoderAutoregressiveCache as TransformerDecoderAutoregressiveCache
from ._transformer import TransformerDecoderConfig as TransformerDecoderConfig
from ._transformer import TransformerDecoderInput as TransformerDecoderInput
from ._transformer import TransformerDecoderLayer as TransformerDecoderLayer
from ._transformer import TransformerEncoder as TransformerEncoder
from ._transformer import TransformerEncoderAutoregressiveCache as TransformerEncoderAutoregressiveCache
from ._transformer import TransformerEncoderConfig as TransformerEncoderConfig
from ._transformer import TransformerEncoderInput as TransformerEncoderInput
from ._transformer import TransformerEncoderLayer as TransformerEncoderLayer
from ._version import __version__ as __version__

__all__ = [
    # losses: burn_nn.loss; functional forms: burn_nn.functional (optimizers and schedulers: burn_nn.optim)
    "loss",
    "functional",
    # building blocks
    "Config",
    "ConfigError",
    "variant",
    "Initializer",
    "Module",
    "ModuleMapper",
    "ModuleVisitor",
    "ParamRecord",
    "Recorder",
    "RecordError",
    "LoadResult",
    "RngRecord",
    "rng_record",
    "load_rng_record",
    "is_training",
    "Param",
    "ParamId",
    "RunningState",
    # parameter groups and LoRA fine-tuning
    "ParamGroup",
    "ParamGroupError",
    "Quantizer",
    "Calibration",
    "quantize_weights_gptq",
    "LoraConfig",
    "LoraLinear",
    "lora_adapters",
    # dense, embedding, dropout
    "Dropout",
    "DropoutConfig",
    "Identity",
    "Linear",
    "LinearConfig",
    "Embedding",
    "EmbeddingConfig",
    # convolution, pooling, padding, resampling
    "Conv1d",
    "Conv1dConfig",
    "Conv2d",
    "Conv2dConfig",
    "Conv3d",
    "Conv3dConfig",
    "ConvTranspose1d",
    "ConvTranspose1dConfig",
    "ConvTranspose2d",
    "ConvTranspose2dConfig",
    "ConvTranspose3d",
    "ConvTranspose3dConfig",
    "PaddingConfig1d",
    "PaddingConfig2d",
    "PaddingConfig3d",
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool1dConfig",
    "AdaptiveAvgPool2d",
    "AdaptiveAvgPool2dConfig",
    "AvgPool1d",
    "AvgPool1dConfig",
    "AvgPool2d",
    "AvgPool2dConfig",
    "MaxPool1d",
    "MaxPool1dConfig",
    "MaxPool2d",
    "MaxPool2dConfig",
    "Interpolate1d",
    "Interpolate1dConfig",
    "Interpolate2d",
    "Interpolate2dConfig",
    "InterpolateMode",
    "PixelShuffle",
    "PixelShuffleConfig",
    "PixelUnshuffle",
    "PixelUnshuffleConfig",
    "Unfold4d",
    "Unfold4dConfig",
    # normalization
    "LayerNorm",
    "LayerNormConfig",
    "BatchNorm",
    "BatchNormConfig",
    "GroupNorm",
    "GroupNormConfig",
    "InstanceNorm",
    "InstanceNormConfig",
    "NormalizationConfig",
    "RmsNorm",
    "RmsNormConfig",
    # activations
    "Activation",
    "ActivationConfig",
    "Celu",
    "CeluConfig",
    "Elu",
    "EluConfig",
    "GLU",
    "Gelu",
    "GeluApproximate",
    "HardShrink",
    "HardShrinkConfig",
    "HardSigmoid",
    "HardSigmoidConfig",
    "HardSwish",
    "Hardtanh",
    "HardtanhConfig",
    "LeakyRelu",
    "LeakyReluConfig",
    "LogSigmoid",
    "LogSoftmax",
    "Mish",
    "PRelu",
    "PReluConfig",
    "QuietSoftmax",
    "RRelu",
    "RReluConfig",
    "Relu",
    "Relu6",
    "Selu",
    "Shrink",
    "ShrinkConfig",
    "SiLU",
    "Sigmoid",
    "SoftShrink",
    "SoftShrinkConfig",
    "Softmax",
    "Softmin",
    "Softplus",
    "SoftplusConfig",
    "Softsign",
    "SwiGlu",
    "SwiGluConfig",
    "Tanh",
    "Tanhshrink",
    "Threshold",
    "ThresholdConfig",
    "ThresholdedRelu",
    "ThresholdedReluConfig",
    # attention, transformers, positional encodings
    "GeneratePaddingMask",
    "MhaCache",
    "MhaInput",
    "MhaOutput",
    "MultiHeadAttention",
    "MultiHeadAttentionConfig",
    "SeqLengthOption",
    "generate_autoregressive_mask",
    "generate_padding_mask",
    "PositionalEncoding",
    "PositionalEncodingConfig",
    "RotaryEncoding",
    "RotaryEncodingConfig",
    "generate_sinusoids",
    "PositionWiseFeedForward",
    "PositionWiseFeedForwardConfig",
    "TransformerDecoder",
    "TransformerDecoderAutoregressiveCache",
    "TransformerDecoderConfig",
    "TransformerDecoderInput",
    "TransformerDecoderLayer",
    "TransformerEncoder",
    "TransformerEncoderAutoregressiveCache",
    "TransformerEncoderConfig",
    "TransformerEncoderInput",
    "TransformerEncoderLayer",
    # recurrent
    "BiGru",
    "BiGruConfig",
    "Gru",
    "GruConfig",
    "BiLstm",
    "BiLstmConfig",
    "Lstm",
    "LstmConfig",
    "LstmState",
    "BiRnn",
    "BiRnnConfig",
    "GateController",
    "Rnn",
    "RnnConfig",
    "RnnState",
]
