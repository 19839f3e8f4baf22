"""Optimizers, gradient containers and learning-rate schedulers.

The book's training step reads the same here::

    grads = GradientsParams.from_grads(loss.backward(), model)
    model = optim.step(lr, model, grads)
"""

# == exports: optimizers ==
from ._adagrad import AdaGrad as AdaGrad
from ._adagrad import AdaGradConfig as AdaGradConfig
from ._adam import Adam as Adam
from ._adam import AdamConfig as AdamConfig
from ._adam import AdamW as AdamW
from ._adam import AdamWConfig as AdamWConfig
from ._adan import Adan as Adan
from ._adan import AdanConfig as AdanConfig
from ._clipping import GradientClipping as GradientClipping
from ._clipping import GradientClippingConfig as GradientClippingConfig
from ._clipping import clip_grad_norm as clip_grad_norm
from ._grads import GradientsAccumulator as GradientsAccumulator
from ._grads import GradientsParams as GradientsParams
from ._momentum import Momentum as Momentum
from ._momentum import MomentumConfig as MomentumConfig
from ._muon import AdjustLrFn as AdjustLrFn
from ._muon import Muon as Muon
from ._muon import MuonConfig as MuonConfig
from ._optimizer import ModuleOptimizer as ModuleOptimizer
from ._optimizer import Optimizer as Optimizer
from ._optimizer import OptimizerRecord as OptimizerRecord
from ._optimizer import OptimizerState as OptimizerState
from ._rmsprop import RmsProp as RmsProp
from ._rmsprop import RmsPropConfig as RmsPropConfig
from ._sgd import Sgd as Sgd
from ._sgd import SgdConfig as SgdConfig
from ._weight_decay import WeightDecay as WeightDecay
from ._weight_decay import WeightDecayConfig as WeightDecayConfig

# == end: optimizers ==
# == exports: lr schedulers ==
# isort: split
from ._lr_composite import ComposedLrScheduler as ComposedLrScheduler
from ._lr_composite import ComposedLrSchedulerConfig as ComposedLrSchedulerConfig
from ._lr_composite import LrSchedulerConfig as LrSchedulerConfig
from ._lr_composite import SchedulerReduction as SchedulerReduction
from ._lr_composite import SequentialLrScheduler as SequentialLrScheduler
from ._lr_composite import SequentialLrSchedulerConfig as SequentialLrSchedulerConfig
from ._lr_scheduler import ConstantLr as ConstantLr
from ._lr_scheduler import LrScheduler as LrScheduler
from ._lr_scheduler import LrSchedulerRecord as LrSchedulerRecord
from ._lr_schedules import CosineAnnealingLrScheduler as CosineAnnealingLrScheduler
from ._lr_schedules import CosineAnnealingLrSchedulerConfig as CosineAnnealingLrSchedulerConfig
from ._lr_schedules import ExponentialLrScheduler as ExponentialLrScheduler
from ._lr_schedules import ExponentialLrSchedulerConfig as ExponentialLrSchedulerConfig
from ._lr_schedules import LinearLrScheduler as LinearLrScheduler
from ._lr_schedules import LinearLrSchedulerConfig as LinearLrSchedulerConfig
from ._lr_schedules import NoamLrScheduler as NoamLrScheduler
from ._lr_schedules import NoamLrSchedulerConfig as NoamLrSchedulerConfig
from ._lr_schedules import StepLrScheduler as StepLrScheduler
from ._lr_schedules import StepLrSchedulerConfig as StepLrSchedulerConfig

# == end: lr schedulers ==

__all__ = [
    # == exports: optimizers ==
    "GradientsParams",
    "GradientsAccumulator",
    "GradientClipping",
    "GradientClippingConfig",
    "clip_grad_norm",
    "Optimizer",
    "ModuleOptimizer",
    "OptimizerState",
    "OptimizerRecord",
    "WeightDecay",
    "WeightDecayConfig",
    "Momentum",
    "MomentumConfig",
    "Sgd",
    "SgdConfig",
    "Adam",
    "AdamConfig",
    "AdamW",
    "AdamWConfig",
    "AdaGrad",
    "AdaGradConfig",
    "RmsProp",
    "RmsPropConfig",
    "Adan",
    "AdanConfig",
    "Muon",
    "MuonConfig",
    "AdjustLrFn",
    # == end: optimizers ==
    # == exports: lr schedulers ==
    "LrScheduler",
    "LrSchedulerRecord",
    "LrSchedulerConfig",
    "ConstantLr",
    "LinearLrScheduler",
    "LinearLrSchedulerConfig",
    "CosineAnnealingLrScheduler",
    "CosineAnnealingLrSchedulerConfig",
    "ExponentialLrScheduler",
    "ExponentialLrSchedulerConfig",
    "StepLrScheduler",
    "StepLrSchedulerConfig",
    "NoamLrScheduler",
    "NoamLrSchedulerConfig",
    "SequentialLrScheduler",
    "SequentialLrSchedulerConfig",
    "ComposedLrScheduler",
    "ComposedLrSchedulerConfig",
    "SchedulerReduction",
    # == end: lr schedulers ==
]
