"""Classification metrics: accuracy, top-k accuracy, precision, recall, F-beta, AUROC and the Hamming
score, with their inputs. Values are computed on the host in float64 from the step's tensors (read once
per step, see ``to_host``); an epoch's value is computed from the whole epoch's counts (or scores), not
averaged over batches."""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any, ClassVar

import numpy as np

from burn_backend import Tensor

from ._base import MetricEntry, MetricMetadata, as_numpy, format_value

__all__ = [
    "AccuracyInput",
    "AccuracyMetric",
    "AurocInput",
    "AurocMetric",
    "ClassReduction",
    "ConfusionStatsInput",
    "FBetaScoreMetric",
    "HammingScore",
    "HammingScoreInput",
    "PrecisionMetric",
    "RecallMetric",
    "TopKAccuracyInput",
    "TopKAccuracyMetric",
]

Array = Tensor | np.ndarray


@dataclasses.dataclass(frozen=True)
class AccuracyInput:
    """Input of ``AccuracyMetric``: ``outputs`` ``[batch, classes]`` (logits or probabilities) and
    ``targets`` ``[batch]`` (class indices)."""

    outputs: Array
    targets: Array


@dataclasses.dataclass(frozen=True)
class TopKAccuracyInput:
    """Input of ``TopKAccuracyMetric``: ``outputs`` ``[batch, classes]`` and ``targets`` ``[batch]``."""

    outputs: Array
    targets: Array


@dataclasses.dataclass(frozen=True)
class ConfusionStatsInput:
    """Input of ``PrecisionMetric``, ``RecallMetric`` and ``FBetaScoreMetric``: ``predictions``
    ``[batch, classes]`` (scores) and ``targets``, either ``[batch, classes]`` (one-hot or multi-hot,
    bool or 0/1) or ``[batch]`` class indices. For binary classification both may be ``[batch]`` or
    ``[batch, 1]``."""

    predictions: Array
    targets: Array


@dataclasses.dataclass(frozen=True)
class AurocInput:
    """Input of ``AurocMetric``: ``outputs`` ``[batch]`` or ``[batch, 1]`` (scores of the positive
    class), ``[batch, 2]`` (logits or probabilities of two classes), or ``[batch, classes]``; ``targets``
    ``[batch]`` (class indices)."""

    outputs: Array
    targets: Array


@dataclasses.dataclass(frozen=True)
class HammingScoreInput:
    """Input of ``HammingScore``: ``outputs`` ``[batch, labels]`` (scores) and ``targets``
    ``[batch, labels]`` (0/1)."""

    outputs: Array
    targets: Array


def _rows(where: str, outputs: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    outputs = np.asarray(outputs, dtype=np.float64)
    targets = np.asarray(targets).astype(np.int64).reshape(-1)
    if outputs.ndim != 2 or outputs.shape[0] != targets.shape[0]:
        raise ValueError(
            f"{where}: expected outputs [batch, classes] and targets [batch], got {list(outputs.shape)} "
            f"and {list(targets.shape)}"
        )
    return outputs, targets


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else math.nan


class _CountMetric:
    """A percentage of counted successes, per batch and over the epoch."""

    input_type: ClassVar[type | None] = None
    _name = ""

    def __init__(self) -> None:
        self._value = math.nan
        self._hits = 0.0
        self._total = 0.0

    def name(self) -> str:
        """The metric's name."""
        return self._name

    def _record(self, hits: float, total: float) -> MetricEntry:
        self._value = 100.0 * _ratio(hits, total)
        self._hits += hits
        self._total += total
        return MetricEntry(
            self.name(), format_value(self._value, "%"), f"{self._value!r},{int(total)}", self._value,
            self.running_value(), "%",
        )  # fmt: skip

    def value(self) -> float:
        """The last batch's value, in percent."""
        return self._value

    def running_value(self) -> float:
        """The value over the epoch so far, in percent."""
        return 100.0 * _ratio(self._hits, self._total)

    def clear(self) -> None:
        """Forget the epoch's counts."""
        self._value, self._hits, self._total = math.nan, 0.0, 0.0


class AccuracyMetric(_CountMetric):
    """The percentage of items whose highest output is the target class (Burn's ``AccuracyMetric``);
    items whose target is the pad token (when set) are not counted.

    Example:
        >>> metric = AccuracyMetric()
        >>> metric.update(AccuracyInput(np.array([[0.1, 0.9], [0.8, 0.2]]), np.array([1, 1])),
        ...               MetricMetadata.fake()).formatted
        '50.00 %'
    """

    input_type = AccuracyInput
    _name = "Accuracy"

    def __init__(self, pad_token: int | None = None) -> None:
        super().__init__()
        self.pad_token = pad_token

    def with_pad_token(self, pad_token: int) -> AccuracyMetric:
        """This metric, ignoring items whose target is ``pad_token``."""
        self.pad_token = pad_token
        return self

    def update(self, item: AccuracyInput, metadata: MetricMetadata) -> MetricEntry:
        """Count the batch's correct predictions."""
        outputs, targets = _rows("AccuracyMetric", as_numpy(item.outputs), as_numpy(item.targets))
        keep = np.ones_like(targets, dtype=bool) if self.pad_token is None else targets != self.pad_token
        correct = (outputs.argmax(axis=1) == targets) & keep
        return self._record(float(correct.sum()), float(keep.sum()))


class TopKAccuracyMetric(_CountMetric):
    """The percentage of items whose target class is among the ``k`` highest outputs (Burn's
    ``TopKAccuracyMetric``); pad-token targets are not counted.

    Example:
        >>> TopKAccuracyMetric(2).name()
        'Top-2 Accuracy'
    """

    input_type = TopKAccuracyInput

    def __init__(self, k: int, pad_token: int | None = None) -> None:
        super().__init__()
        if k < 1:
            raise ValueError(f"TopKAccuracyMetric: k must be >= 1, got {k}")
        self.k = k
        self.pad_token = pad_token
        self._name = f"Top-{k} Accuracy"

    def with_pad_token(self, pad_token: int) -> TopKAccuracyMetric:
        """This metric, ignoring items whose target is ``pad_token``."""
        self.pad_token = pad_token
        return self

    def update(self, item: TopKAccuracyInput, metadata: MetricMetadata) -> MetricEntry:
        """Count the batch's items with the target in the top ``k``."""
        outputs, targets = _rows("TopKAccuracyMetric", as_numpy(item.outputs), as_numpy(item.targets))
        top = np.argsort(-outputs, axis=1, kind="stable")[:, : self.k]
        keep = np.ones_like(targets, dtype=bool) if self.pad_token is None else targets != self.pad_token
        correct = (top == targets[:, None]).any(axis=1) & keep
        return self._record(float(correct.sum()), float(keep.sum()))


class HammingScore(_CountMetric):
    """The percentage of (item, label) pairs predicted right in multi-label classification (Burn's
    ``HammingScore``; ``1 - hamming_loss``): a label is predicted where its output (after a sigmoid,
    with ``with_sigmoid(True)``) is at least the threshold.

    Example:
        >>> HammingScore().with_threshold(0.3).threshold
        0.3
    """

    input_type = HammingScoreInput
    _name = "Hamming Score"

    def __init__(self, threshold: float = 0.5, sigmoid: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.sigmoid = sigmoid

    def with_threshold(self, threshold: float) -> HammingScore:
        """This metric with another decision threshold."""
        self.threshold = threshold
        return self

    def with_sigmoid(self, sigmoid: bool) -> HammingScore:
        """This metric, applying a sigmoid to the outputs first (for logits) or not."""
        self.sigmoid = sigmoid
        return self

    def update(self, item: HammingScoreInput, metadata: MetricMetadata) -> MetricEntry:
        """Count the batch's labels predicted right."""
        outputs = np.asarray(as_numpy(item.outputs), dtype=np.float64)
        targets = np.asarray(as_numpy(item.targets)).astype(bool)
        if outputs.shape != targets.shape:
            raise ValueError(
                f"HammingScore: outputs {list(outputs.shape)} and targets {list(targets.shape)} differ"
            )
        if self.sigmoid:
            outputs = 1.0 / (1.0 + np.exp(-outputs))
        correct = (outputs >= self.threshold) == targets
        return self._record(float(correct.sum()), float(correct.size))


class ClassReduction(enum.Enum):
    """How per-class statistics are combined: ``MICRO`` sums the counts of every class first,
    ``MACRO`` averages the per-class values (every class counts the same)."""

    MICRO = "micro"
    MACRO = "macro"


class _ConfusionMetric:
    """Precision, recall or F-beta from true/false positives and false negatives per class."""

    input_type: ClassVar[type | None] = ConfusionStatsInput
    _base_name = ""

    def __init__(
        self,
        kind: str = "multiclass",
        *,
        threshold: float = 0.5,
        top_k: int = 1,
        average: ClassReduction = ClassReduction.MICRO,
    ) -> None:
        if kind not in ("binary", "multiclass", "multilabel"):
            raise ValueError(f"{type(self).__name__}: unknown kind {kind!r}")
        if top_k < 1:
            raise ValueError(f"{type(self).__name__}: top_k must be >= 1, got {top_k}")
        self.kind, self.threshold, self.top_k, self.average = kind, threshold, top_k, average
        self._value = math.nan
        self._counts: np.ndarray | None = None  # [3, classes]: tp, fp, fn

    @classmethod
    def binary(cls, threshold: float = 0.5) -> Any:
        """For one output per item: positive where the output is at least ``threshold``."""
        return cls("binary", threshold=threshold)

    @classmethod
    def multiclass(cls, top_k: int = 1) -> Any:
        """For one class per item: the ``top_k`` highest outputs are the predicted classes."""
        return cls("multiclass", top_k=top_k)

    @classmethod
    def multilabel(cls, threshold: float = 0.5) -> Any:
        """For several labels per item: each label is predicted where its output is at least
        ``threshold``."""
        return cls("multilabel", threshold=threshold)

    def with_average(self, average: ClassReduction) -> Any:
        """This metric with per-class values combined by ``average``."""
        self.average = average
        return self

    def name(self) -> str:
        """The metric's name."""
        return self._base_name

    def _combine(self, counts: np.ndarray) -> float:
        raise NotImplementedError

    def update(self, item: ConfusionStatsInput, metadata: MetricMetadata) -> MetricEntry:
        """Add the batch's true/false positives and false negatives."""
        predictions = np.asarray(as_numpy(item.predictions), dtype=np.float64)
        targets = np.asarray(as_numpy(item.targets)).astype(bool)
        if self.kind == "binary":
            predictions, targets = predictions.reshape(-1, 1), targets.reshape(-1, 1)
        elif predictions.ndim == 2 and targets.ndim == 1 and len(targets) == len(predictions):
            indices = np.asarray(as_numpy(item.targets)).astype(np.int64)  # class indices: one-hot them
            targets = np.zeros(predictions.shape, dtype=bool)
            targets[np.arange(len(indices)), indices] = True
        if predictions.ndim != 2 or predictions.shape != targets.shape:
            raise ValueError(
                f"{type(self).__name__}: expected predictions and targets [batch, classes] of one shape, "
                f"got {list(predictions.shape)} and {list(targets.shape)}"
            )
        if self.kind == "multiclass":
            top = np.argsort(-predictions, axis=1, kind="stable")[:, : self.top_k]
            predicted = np.zeros_like(targets)
            np.put_along_axis(predicted, top, True, axis=1)
        else:
            predicted = predictions >= self.threshold
        counts = np.stack(
            [(predicted & targets).sum(0), (predicted & ~targets).sum(0), (~predicted & targets).sum(0)]
        ).astype(np.float64)
        self._counts = counts if self._counts is None else self._counts + counts
        self._value = 100.0 * self._combine(counts)
        return MetricEntry(
            self.name(), format_value(self._value, "%"), f"{self._value!r},{len(targets)}", self._value,
            self.running_value(), "%",
        )  # fmt: skip

    def value(self) -> float:
        """The last batch's value, in percent."""
        return self._value

    def running_value(self) -> float:
        """The value over the epoch's counts so far, in percent."""
        return math.nan if self._counts is None else 100.0 * self._combine(self._counts)

    def clear(self) -> None:
        """Forget the epoch's counts."""
        self._value, self._counts = math.nan, None

    def _reduce(self, numerators: np.ndarray, denominators: np.ndarray) -> float:
        if self.average is ClassReduction.MICRO:
            total = float(denominators.sum())
            return float(numerators.sum()) / total if total else 0.0
        per_class = np.divide(numerators, denominators, out=np.zeros_like(numerators), where=denominators > 0)
        return float(per_class.mean())


class PrecisionMetric(_ConfusionMetric):
    """Precision, ``tp / (tp + fp)``, in percent (Burn's ``PrecisionMetric``): ``binary(threshold)``,
    ``multiclass(top_k)`` or ``multilabel(threshold)``, combined over classes by ``with_average``
    (micro by default). A class with nothing predicted counts 0, as scikit-learn's default does.

    Example:
        >>> metric = PrecisionMetric.multiclass().with_average(ClassReduction.MACRO)
    """

    _base_name = "Precision"

    def _combine(self, counts: np.ndarray) -> float:
        tp, fp, _ = counts
        return self._reduce(tp, tp + fp)


class RecallMetric(_ConfusionMetric):
    """Recall, ``tp / (tp + fn)``, in percent (Burn's ``RecallMetric``); settings as
    ``PrecisionMetric``.

    Example:
        >>> metric = RecallMetric.multilabel(0.5)
    """

    _base_name = "Recall"

    def _combine(self, counts: np.ndarray) -> float:
        tp, _, fn = counts
        return self._reduce(tp, tp + fn)


class FBetaScoreMetric(_ConfusionMetric):
    """The F-beta score, ``(1 + b²) tp / ((1 + b²) tp + b² fn + fp)``, in percent (Burn's
    ``FBetaScoreMetric``; ``beta = 1`` is F1); settings as ``PrecisionMetric``.

    Example:
        >>> FBetaScoreMetric.multiclass().with_beta(2.0).name()
        'F2-Score'
    """

    _base_name = "F1-Score"
    beta = 1.0

    def with_beta(self, beta: float) -> FBetaScoreMetric:
        """This metric with another ``beta`` (> 0)."""
        if not beta > 0:
            raise ValueError(f"FBetaScoreMetric: beta must be > 0, got {beta}")
        self.beta = float(beta)
        self._base_name = f"F{self.beta:g}-Score"
        return self

    def _combine(self, counts: np.ndarray) -> float:
        tp, fp, fn = counts
        b2 = self.beta * self.beta
        return self._reduce((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp)


def _average_ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="mergesort")
    ordered = values[order]
    ranks = np.empty(len(values), dtype=np.float64)
    boundaries = np.flatnonzero(np.diff(ordered)) + 1
    starts = np.concatenate([[0], boundaries])
    ends = np.concatenate([boundaries, [len(values)]])
    for start, end in zip(starts, ends):
        ranks[order[start:end]] = (start + end + 1) / 2.0  # the mean of ranks start+1 .. end
    return ranks


def binary_auroc(scores: np.ndarray, positive: np.ndarray) -> float:
    """The area under the ROC curve of ``scores`` for the ``positive`` mask (the Mann-Whitney statistic
    with tied scores sharing their mean rank); NaN when only one class is present."""
    positives = int(positive.sum())
    negatives = len(positive) - positives
    if positives == 0 or negatives == 0:
        return math.nan
    ranks = _average_ranks(np.asarray(scores, dtype=np.float64))
    return float((ranks[positive].sum() - positives * (positives + 1) / 2.0) / (positives * negatives))


class AurocMetric:
    """The area under the ROC curve (Burn's ``AurocMetric``), from 0 to 1: binary for outputs
    ``[batch]``/``[batch, 1]`` (scores) or ``[batch, 2]`` (the softmax of the two outputs gives the
    positive class's probability); one-vs-rest and macro-averaged over classes for more columns. The
    epoch's value uses every score of the epoch (kept until ``clear``). NaN where a batch holds a
    single class.

    Example:
        >>> metric = AurocMetric()
        >>> metric.update(AurocInput(np.array([0.1, 0.8, 0.4]), np.array([0, 1, 1])),
        ...               MetricMetadata.fake()).value
        1.0
    """

    input_type: ClassVar[type | None] = AurocInput

    def __init__(self) -> None:
        self._value = math.nan
        self._running: float | None = None
        self._scores: list[np.ndarray] = []
        self._targets: list[np.ndarray] = []

    def name(self) -> str:
        """The metric's name."""
        return "AUROC"

    @staticmethod
    def _probabilities(outputs: np.ndarray) -> np.ndarray:
        if outputs.ndim == 1 or outputs.shape[1] == 1:
            return outputs.reshape(-1)
        shifted = np.exp(outputs - outputs.max(axis=1, keepdims=True))
        probabilities: np.ndarray = shifted / shifted.sum(axis=1, keepdims=True)
        return probabilities[:, 1] if outputs.shape[1] == 2 else probabilities

    @staticmethod
    def _auroc(scores: np.ndarray, targets: np.ndarray) -> float:
        if scores.ndim == 1:
            return binary_auroc(scores, targets == 1)
        values = [binary_auroc(scores[:, c], targets == c) for c in range(scores.shape[1])]
        return math.nan if any(math.isnan(v) for v in values) else float(np.mean(values))

    def update(self, item: AurocInput, metadata: MetricMetadata) -> MetricEntry:
        """Add the batch's scores."""
        outputs = np.asarray(as_numpy(item.outputs), dtype=np.float64)
        targets = np.asarray(as_numpy(item.targets)).astype(np.int64).reshape(-1)
        if outputs.ndim not in (1, 2) or outputs.shape[0] != targets.shape[0]:
            raise ValueError(
                f"AurocMetric: expected outputs [batch] or [batch, classes] and targets [batch], got "
                f"{list(outputs.shape)} and {list(targets.shape)}"
            )
        scores = self._probabilities(outputs)
        self._scores.append(scores)
        self._targets.append(targets)
        self._value = self._auroc(scores, targets)
        self._running = None
        return MetricEntry(
            self.name(), format_value(self._value, "", 4), f"{self._value!r},{len(targets)}", self._value,
            None, "", 4,
        )  # fmt: skip

    def value(self) -> float:
        """The last batch's AUROC."""
        return self._value

    def running_value(self) -> float:
        """The AUROC of every score since ``clear``."""
        if not self._scores:
            return math.nan
        if self._running is None:  # computed on demand: sorting the epoch's scores at every step is slow
            self._running = self._auroc(np.concatenate(self._scores), np.concatenate(self._targets))
        return self._running

    def clear(self) -> None:
        """Forget the epoch's scores."""
        self._value, self._running, self._scores, self._targets = math.nan, None, [], []
