"""Metrics against independent references: scikit-learn for the classification metrics, PyTorch for the
loss and perplexity, the operating system's own counters for the system metrics. Each is checked per
batch and over an epoch of several batches."""

from __future__ import annotations

import gc
import math
import os
import time
import weakref

import numpy as np
import pytest

from burn_backend import Tensor, default_device
from burn_train import (
    AccuracyInput,
    AccuracyMetric,
    AurocInput,
    AurocMetric,
    ClassificationOutput,
    ClassReduction,
    ConfusionStatsInput,
    CpuMemory,
    CpuUse,
    CudaMemory,
    FBetaScoreMetric,
    HammingScore,
    HammingScoreInput,
    IterationSpeedMetric,
    LearningRateMetric,
    LossInput,
    LossMetric,
    Metric,
    MetricMetadata,
    MultiLabelClassificationOutput,
    Numeric,
    PerplexityInput,
    PerplexityMetric,
    PrecisionMetric,
    RecallMetric,
    RegressionOutput,
    TopKAccuracyInput,
    TopKAccuracyMetric,
    cuda_metrics_available,
)
from burn_train._metrics._base import adapt, to_host, to_host_async

metrics_module = pytest.importorskip("sklearn.metrics")
META = MetricMetadata.fake()
RNG_SEED = 1234


def _batches(classes: int = 5, sizes: tuple[int, ...] = (32, 32, 17)) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(RNG_SEED)
    batches = []
    for size in sizes:
        targets = rng.integers(0, classes, size)
        outputs = rng.normal(size=(size, classes))
        outputs[np.arange(size), targets] += rng.normal(1.0, 1.0, size)  # better than chance, not perfect
        batches.append((outputs, targets))
    return batches


def _epoch(metric: object, batches: list, make: object) -> tuple[list[float], float]:
    values = [metric.update(make(o, t), META).value for o, t in batches]  # type: ignore[attr-defined,operator]
    return values, metric.running_value()  # type: ignore[attr-defined]


def _all(batches: list) -> tuple[np.ndarray, np.ndarray]:
    return np.concatenate([o for o, _ in batches]), np.concatenate([t for _, t in batches])


def test_accuracy_and_top_k_match_sklearn() -> None:
    batches = _batches()
    outputs, targets = _all(batches)
    values, epoch = _epoch(AccuracyMetric(), batches, AccuracyInput)
    for (o, t), value in zip(batches, values):
        assert value == pytest.approx(100 * metrics_module.accuracy_score(t, o.argmax(1)))
    assert epoch == pytest.approx(100 * metrics_module.accuracy_score(targets, outputs.argmax(1)))
    for k in (1, 2, 3):
        values, epoch = _epoch(TopKAccuracyMetric(k), batches, TopKAccuracyInput)
        reference = metrics_module.top_k_accuracy_score(targets, outputs, k=k, labels=range(5))
        assert epoch == pytest.approx(100 * reference)
        assert values[0] == pytest.approx(
            100 * metrics_module.top_k_accuracy_score(batches[0][1], batches[0][0], k=k, labels=range(5))
        )


def test_accuracy_ignores_the_pad_token() -> None:
    outputs, targets = _batches(sizes=(64,))[0]
    metric = AccuracyMetric().with_pad_token(0)
    keep = targets != 0
    value = metric.update(AccuracyInput(outputs, targets), META).value
    assert value == pytest.approx(100 * metrics_module.accuracy_score(targets[keep], outputs[keep].argmax(1)))
    top = TopKAccuracyMetric(2, pad_token=0).update(TopKAccuracyInput(outputs, targets), META).value
    assert top == pytest.approx(
        100 * metrics_module.top_k_accuracy_score(targets[keep], outputs[keep], k=2, labels=range(5))
    )


@pytest.mark.parametrize("average", [ClassReduction.MICRO, ClassReduction.MACRO])
def test_multiclass_precision_recall_fbeta_match_sklearn(average: ClassReduction) -> None:
    batches = _batches(classes=4, sizes=(40, 40, 9))
    outputs, targets = _all(batches)
    predicted = outputs.argmax(1)
    kwargs = {"average": average.value, "labels": range(4), "zero_division": 0}
    checks = [
        (PrecisionMetric.multiclass(), metrics_module.precision_score),
        (RecallMetric.multiclass(), metrics_module.recall_score),
        (FBetaScoreMetric.multiclass(), metrics_module.f1_score),
    ]
    for metric, reference in checks:
        values, epoch = _epoch(metric.with_average(average), batches, ConfusionStatsInput)
        assert epoch == pytest.approx(100 * reference(targets, predicted, **kwargs))
        assert values[2] == pytest.approx(100 * reference(batches[2][1], batches[2][0].argmax(1), **kwargs))
    f2 = FBetaScoreMetric.multiclass().with_average(average).with_beta(2.0)
    _, epoch = _epoch(f2, batches, ConfusionStatsInput)
    assert epoch == pytest.approx(100 * metrics_module.fbeta_score(targets, predicted, beta=2.0, **kwargs))
    assert f2.name() == "F2-Score"


def test_top_2_precision_counts_both_predicted_classes() -> None:
    outputs, targets = _batches(classes=4, sizes=(50,))[0]
    top2 = np.argsort(-outputs, axis=1)[:, :2]
    predicted = np.zeros_like(outputs, dtype=bool)
    np.put_along_axis(predicted, top2, True, axis=1)
    onehot = np.eye(4, dtype=bool)[targets]
    metric = PrecisionMetric.multiclass(top_k=2)
    value = metric.update(ConfusionStatsInput(outputs, onehot), META).value
    assert value == pytest.approx(100 * metrics_module.precision_score(onehot, predicted, average="micro"))


@pytest.mark.parametrize("average", [ClassReduction.MICRO, ClassReduction.MACRO])
def test_multilabel_and_binary_match_sklearn(average: ClassReduction) -> None:
    rng = np.random.default_rng(7)
    probabilities = rng.random((60, 6))
    targets = (rng.random((60, 6)) < np.clip(probabilities + 0.2, 0, 1)).astype(np.int64)
    predicted = (probabilities >= 0.4).astype(np.int64)
    kwargs = {"average": average.value, "zero_division": 0}
    for metric, reference in [
        (PrecisionMetric.multilabel(0.4), metrics_module.precision_score),
        (RecallMetric.multilabel(0.4), metrics_module.recall_score),
        (FBetaScoreMetric.multilabel(0.4), metrics_module.f1_score),
    ]:
        metric.with_average(average)
        metric.update(ConfusionStatsInput(probabilities[:25], targets[:25]), META)
        metric.update(ConfusionStatsInput(probabilities[25:], targets[25:]), META)
        assert metric.running_value() == pytest.approx(100 * reference(targets, predicted, **kwargs))
    binary = PrecisionMetric.binary(0.5)
    value = binary.update(ConfusionStatsInput(probabilities[:, 0], targets[:, 0]), META).value
    assert value == pytest.approx(
        100 * metrics_module.precision_score(targets[:, 0], probabilities[:, 0] >= 0.5)
    )


def test_hamming_score_matches_sklearn() -> None:
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(30, 5))
    targets = (rng.random((30, 5)) < 0.5).astype(np.int64)
    metric = HammingScore().with_sigmoid(True).with_threshold(0.6)
    metric.update(HammingScoreInput(logits[:10], targets[:10]), META)
    metric.update(HammingScoreInput(logits[10:], targets[10:]), META)
    predicted = (1 / (1 + np.exp(-logits)) >= 0.6).astype(np.int64)
    assert metric.running_value() == pytest.approx(
        100 * (1 - metrics_module.hamming_loss(targets, predicted))
    )


def test_auroc_matches_sklearn_binary_and_one_vs_rest() -> None:
    rng = np.random.default_rng(5)
    targets = rng.integers(0, 2, 200)
    scores = np.round(rng.normal(size=200) + targets, 1)  # rounding makes ties, which must share ranks
    metric = AurocMetric()
    metric.update(AurocInput(scores[:120], targets[:120]), META)
    value = metric.update(AurocInput(scores[120:], targets[120:]), META).value
    assert value == pytest.approx(metrics_module.roc_auc_score(targets[120:], scores[120:]))
    assert metric.running_value() == pytest.approx(metrics_module.roc_auc_score(targets, scores))
    logits = np.stack([rng.normal(size=200), rng.normal(size=200) + targets], axis=1)
    two = AurocMetric().update(AurocInput(logits, targets), META).value
    softmax = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    assert two == pytest.approx(metrics_module.roc_auc_score(targets, softmax[:, 1]))
    outputs, classes = _all(_batches(classes=4, sizes=(100, 100)))
    multi = AurocMetric().update(AurocInput(outputs, classes), META).value
    probabilities = np.exp(outputs) / np.exp(outputs).sum(1, keepdims=True)
    assert multi == pytest.approx(metrics_module.roc_auc_score(classes, probabilities, multi_class="ovr"))
    assert math.isnan(AurocMetric().update(AurocInput(np.array([0.3, 0.4]), np.array([1, 1])), META).value)


def test_loss_and_perplexity_match_torch() -> None:
    torch = pytest.importorskip("torch")
    batches = _batches(classes=7, sizes=(16, 16, 5))
    loss_metric, perplexity = LossMetric(), PerplexityMetric()
    losses, total, count = [], 0.0, 0
    for outputs, targets in batches:
        loss = torch.nn.functional.cross_entropy(torch.tensor(outputs), torch.tensor(targets))
        losses.append(float(loss))
        total += float(loss) * len(targets)
        count += len(targets)
        assert loss_metric.update(
            LossInput(np.array([float(loss)]), len(targets)), META
        ).value == pytest.approx(float(loss))
        value = perplexity.update(PerplexityInput(outputs, targets), META).value
        assert value == pytest.approx(math.exp(float(loss)))
    assert loss_metric.running_value() == pytest.approx(total / count)
    assert perplexity.running_value() == pytest.approx(math.exp(total / count))
    outputs, targets = batches[0]
    padded = PerplexityMetric().with_pad_token(2).update(PerplexityInput(outputs, targets), META).value
    reference = torch.nn.functional.cross_entropy(
        torch.tensor(outputs), torch.tensor(targets), ignore_index=2
    )
    assert padded == pytest.approx(math.exp(float(reference)))


def test_learning_rate_and_iteration_speed() -> None:
    lr = LearningRateMetric()
    assert lr.update(None, MetricMetadata(lr=0.25)).value == 0.25
    assert math.isnan(lr.update(None, MetricMetadata()).value)
    speed = IterationSpeedMetric()
    start = time.perf_counter()
    for step in range(5):
        speed.update(None, META)
        if step < 4:
            time.sleep(0.01)
    expected = 4 / (time.perf_counter() - start)  # 4 intervals between the 5 updates
    assert speed.value() == pytest.approx(expected, rel=0.1)
    assert speed.value() >= expected


def test_system_metrics_agree_with_the_operating_system() -> None:
    memory = CpuMemory()
    entry = memory.update(None, META)
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 1e9
    assert entry.formatted.endswith(f"/ {total:.2f} GB")
    assert 0 < entry.value < total  # type: ignore[operator]
    use = CpuUse()
    deadline = time.monotonic() + 0.6
    while time.monotonic() < deadline:  # keep one core busy
        sum(range(1000))
    value = use.update(None, META).value
    assert value is not None
    assert 100 / (os.cpu_count() or 1) * 0.5 <= value <= 100.0


@pytest.mark.skipif(not cuda_metrics_available(), reason="needs burn-cuda and an NVIDIA driver")
def test_cuda_memory_reads_nvml() -> None:
    entry = CudaMemory(0).update(None, META)
    assert entry.value is not None
    assert entry.value > 0


def test_metrics_satisfy_the_protocols() -> None:
    for metric in (AccuracyMetric(), LossMetric(), AurocMetric(), PrecisionMetric.multiclass(), CpuUse()):
        assert isinstance(metric, Metric)
        assert isinstance(metric, Numeric)


def test_outputs_adapt_and_one_transaction_reads_a_step(monkeypatch: pytest.MonkeyPatch) -> None:
    device = default_device()
    output = Tensor.from_data(np.array([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1]], np.float32), device)
    targets = Tensor.from_data(np.array([1, 2]), device)
    loss = Tensor.from_data(np.array([0.7], np.float32), device)
    classification = ClassificationOutput(loss, output, targets)
    metrics = [AccuracyMetric(), LossMetric(), PrecisionMetric.multiclass(), LearningRateMetric()]
    backend = device.backend
    calls = []
    # the transaction's entry point (a decorator's passes it to its inner backend's, not to tr_execute)
    original = backend.tr_execute_async
    monkeypatch.setattr(backend, "tr_execute_async", lambda *a: calls.append(1) or original(*a))
    inputs = to_host([adapt(classification, m) for m in metrics])
    assert len(calls) == 1
    entries = [m.update(i, META) for m, i in zip(metrics, inputs)]
    assert [e.value for e in entries[:3]] == [pytest.approx(50.0), pytest.approx(0.7), pytest.approx(50.0)]
    assert adapt(RegressionOutput(loss, output, output), LossMetric()).batch_size == 2
    multi = MultiLabelClassificationOutput(loss, output, output)
    assert isinstance(adapt(multi, HammingScore()), HammingScoreInput)
    with pytest.raises(TypeError, match=r"RegressionOutput\.adapt: cannot make a AccuracyInput"):
        adapt(RegressionOutput(loss, output, output), AccuracyMetric())


def test_an_async_read_of_metric_inputs_releases_the_tensors_before_the_wait() -> None:
    # the learner waits for a step's metric inputs once the next step is queued: the inputs it keeps
    # meanwhile hold no tensor, so a replayed step's outputs are free to be overwritten
    device = default_device()
    output = Tensor.from_data(np.array([[0.2, 0.8], [0.9, 0.1], [0.4, 0.6]], np.float32), device)
    targets = Tensor.from_data(np.array([1, 1, 1]), device)
    loss = Tensor.from_data(np.array([0.25], np.float32), device)
    classification = ClassificationOutput(loss, output, targets)
    metrics = [AccuracyMetric(), LossMetric()]
    read = to_host_async([adapt(classification, m) for m in metrics] + ["not a dataclass"])
    released = weakref.ref(output)
    del classification, output
    gc.collect()
    assert released() is None
    accuracy, loss_input, passed = read.wait()
    assert passed == "not a dataclass"
    np.testing.assert_array_equal(accuracy.targets, [1, 1, 1])
    assert [m.update(i, META).value for m, i in zip(metrics, (accuracy, loss_input))] == [
        pytest.approx(200 / 3),
        pytest.approx(0.25),
    ]
