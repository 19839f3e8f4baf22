"""Training for Burn for Python (Burn's ``burn::train``): the ``Learner`` and its builder, step outputs,
metrics, the terminal dashboard, file logging, checkpointing, early stopping; datasets and the data
loader live in ``burn_train.data``.

Example:
    >>> learner = (
    ...     LearnerBuilder("artifacts")
    ...     .metric_train_numeric(AccuracyMetric())
    ...     .metric_valid_numeric(AccuracyMetric())
    ...     .metric_train_numeric(LossMetric())
    ...     .metric_valid_numeric(LossMetric())
    ...     .with_file_checkpointer(recorder)
    ...     .devices([device])
    ...     .num_epochs(10)
    ...     .summary()
    ...     .build(model, AdamConfig().init(), 1e-3)
    ... )  # doctest: +SKIP
    >>> trained = learner.fit(train_loader, valid_loader)  # doctest: +SKIP
"""

from . import data as data
from ._checkpoint import AsyncCheckpointer as AsyncCheckpointer
from ._checkpoint import CheckpointError as CheckpointError
from ._checkpoint import CheckpointingStrategy as CheckpointingStrategy
from ._checkpoint import ComposedCheckpointingStrategy as ComposedCheckpointingStrategy
from ._checkpoint import FileCheckpointer as FileCheckpointer
from ._checkpoint import KeepLastNCheckpoints as KeepLastNCheckpoints
from ._checkpoint import MetricCheckpointingStrategy as MetricCheckpointingStrategy
from ._dashboard import TuiRenderer as TuiRenderer
from ._distributed import GradientSync as GradientSync
from ._evaluator import EvaluationSummary as EvaluationSummary
from ._evaluator import Evaluator as Evaluator
from ._evaluator import EvaluatorBuilder as EvaluatorBuilder
from ._evaluator import LearnerSummary as LearnerSummary
from ._learner import Learner as Learner
from ._learner import LearnerBuilder as LearnerBuilder
from ._logger import FileMetricLogger as FileMetricLogger
from ._metrics._base import Adaptor as Adaptor
from ._metrics._base import Metric as Metric
from ._metrics._base import MetricEntry as MetricEntry
from ._metrics._base import MetricMetadata as MetricMetadata
from ._metrics._base import Numeric as Numeric
from ._metrics._base import NumericMetricState as NumericMetricState
from ._metrics._base import as_numpy as as_numpy
from ._metrics._classification import AccuracyInput as AccuracyInput
from ._metrics._classification import AccuracyMetric as AccuracyMetric
from ._metrics._classification import AurocInput as AurocInput
from ._metrics._classification import AurocMetric as AurocMetric
from ._metrics._classification import ClassReduction as ClassReduction
from ._metrics._classification import ConfusionStatsInput as ConfusionStatsInput
from ._metrics._classification import FBetaScoreMetric as FBetaScoreMetric
from ._metrics._classification import HammingScore as HammingScore
from ._metrics._classification import HammingScoreInput as HammingScoreInput
from ._metrics._classification import PrecisionMetric as PrecisionMetric
from ._metrics._classification import RecallMetric as RecallMetric
from ._metrics._classification import TopKAccuracyInput as TopKAccuracyInput
from ._metrics._classification import TopKAccuracyMetric as TopKAccuracyMetric
from ._metrics._system import CpuMemory as CpuMemory
from ._metrics._system import CpuUse as CpuUse
from ._metrics._system import CudaMemory as CudaMemory
from ._metrics._system import CudaUse as CudaUse
from ._metrics._system import cuda_metrics_available as cuda_metrics_available
from ._metrics._training import IterationSpeedMetric as IterationSpeedMetric
from ._metrics._training import LearningRateMetric as LearningRateMetric
from ._metrics._training import LossInput as LossInput
from ._metrics._training import LossMetric as LossMetric
from ._metrics._training import PerplexityInput as PerplexityInput
from ._metrics._training import PerplexityMetric as PerplexityMetric
from ._multi_device import SplitLoader as SplitLoader
from ._multi_device import data_parallel_step as data_parallel_step
from ._output import ClassificationOutput as ClassificationOutput
from ._output import InferenceStep as InferenceStep
from ._output import MultiLabelClassificationOutput as MultiLabelClassificationOutput
from ._output import RegressionOutput as RegressionOutput
from ._output import TrainOutput as TrainOutput
from ._output import TrainStep as TrainStep
from ._output import ValidStep as ValidStep
from ._plot import write_curves as write_curves
from ._renderer import CliRenderer as CliRenderer
from ._renderer import MetricsRenderer as MetricsRenderer
from ._renderer import TrainingProgress as TrainingProgress
from ._state import Aggregate as Aggregate
from ._state import Direction as Direction
from ._state import Interrupter as Interrupter
from ._state import MetricEarlyStoppingStrategy as MetricEarlyStoppingStrategy
from ._state import MetricsStore as MetricsStore
from ._state import Split as Split
from ._state import StoppingCondition as StoppingCondition
from ._version import __version__ as __version__

__all__ = [
    # (datasets and loading are in the sub-package burn_train.data, re-exported as burn.data)
    # the learner
    "LearnerBuilder",
    "Learner",
    "LearnerSummary",
    "EvaluatorBuilder",
    "Evaluator",
    "EvaluationSummary",
    "Interrupter",
    # checkpoints and stopping
    "FileCheckpointer",
    "AsyncCheckpointer",
    "CheckpointError",
    "CheckpointingStrategy",
    "KeepLastNCheckpoints",
    "MetricCheckpointingStrategy",
    "ComposedCheckpointingStrategy",
    "MetricEarlyStoppingStrategy",
    "StoppingCondition",
    "Aggregate",
    "Direction",
    "Split",
    "MetricsStore",
    # showing and logging
    "MetricsRenderer",
    "TuiRenderer",
    "CliRenderer",
    "TrainingProgress",
    "FileMetricLogger",
    "write_curves",
    # steps and outputs
    "TrainStep",
    "ValidStep",
    "InferenceStep",
    "TrainOutput",
    "ClassificationOutput",
    "RegressionOutput",
    "MultiLabelClassificationOutput",
    # several devices and processes
    "GradientSync",
    "SplitLoader",
    "data_parallel_step",
    # metrics
    "Metric",
    "Numeric",
    "Adaptor",
    "MetricEntry",
    "MetricMetadata",
    "NumericMetricState",
    "as_numpy",
    "LossMetric",
    "LossInput",
    "AccuracyMetric",
    "AccuracyInput",
    "TopKAccuracyMetric",
    "TopKAccuracyInput",
    "PrecisionMetric",
    "RecallMetric",
    "FBetaScoreMetric",
    "ConfusionStatsInput",
    "ClassReduction",
    "AurocMetric",
    "AurocInput",
    "HammingScore",
    "HammingScoreInput",
    "PerplexityMetric",
    "PerplexityInput",
    "LearningRateMetric",
    "IterationSpeedMetric",
    "CpuUse",
    "CpuMemory",
    "CudaMemory",
    "CudaUse",
    "cuda_metrics_available",
]
