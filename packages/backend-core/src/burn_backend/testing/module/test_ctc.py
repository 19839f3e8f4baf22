"""The CTC loss (``module.ctc_loss``) and its backward kernel: losses against a brute-force NumPy float64
reference (every alignment of every sample enumerated and collapsed), gradients against central finite
differences of that reference with respect to the logits behind the log-probabilities (which is what
PyTorch's gradient is), PyTorch float64 cross-checks, the interface's defaults run unbound, and the
errors of the public function."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, ModuleOps, Tensor, module
from burn_backend.testing import check, make
from burn_backend.testing.module._reference import Array, as_f64, default, kernel


# -- reference -----------------------------------------------------------------------------------------
def collapse(path: tuple[int, ...], blank: int) -> tuple[int, ...]:
    """An alignment's labels: repeats merged, then blanks dropped."""
    merged = [symbol for i, symbol in enumerate(path) if i == 0 or symbol != path[i - 1]]
    return tuple(symbol for symbol in merged if symbol != blank)


@dataclass(frozen=True)
class Alignments:
    """Per sample, every path over its input frames and which of them collapse to its target."""

    paths: list[Array]
    valid: list[Array]

    @staticmethod
    def of(
        targets: Array, input_lengths: Array, target_lengths: Array, classes: int, blank: int
    ) -> Alignments:
        paths, valid = [], []
        for n, (frames, length) in enumerate(zip(input_lengths, target_lengths)):
            every = list(itertools.product(range(classes), repeat=int(frames)))
            target = tuple(int(v) for v in targets[n, :length])
            paths.append(np.array(every, dtype=np.int64).reshape(len(every), int(frames)))
            valid.append(np.array([collapse(path, blank) == target for path in every], dtype=bool))
        return Alignments(paths, valid)

    def nll(self, log_probs: Array) -> Array:
        """``-log`` of the summed probability of the valid paths of each sample (``inf`` if none)."""
        losses = []
        for n, (paths, valid) in enumerate(zip(self.paths, self.valid)):
            frames = paths.shape[1]
            scores = log_probs[np.arange(frames)[None, :], n, paths].sum(axis=1)[valid]
            if scores.size == 0:
                losses.append(np.inf)
                continue
            peak = scores.max()
            losses.append(-(peak + np.log(np.sum(np.exp(scores - peak)))))
        return np.array(losses)


def log_softmax(logits: Array) -> Array:
    shifted: Array = logits - logits.max(axis=-1, keepdims=True)
    result: Array = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    return result


def logits_gradient(alignments: Alignments, log_probs: Array, output_grad: Array) -> Array:
    """Central differences of ``sum(output_grad * nll(log_softmax(z)))`` at ``z = log_probs``: PyTorch's
    CTC gradient (for normalized ``log_probs``). Samples with an infinite loss are left out (zeros)."""
    finite = np.isfinite(alignments.nll(log_probs))
    weights = np.where(finite, output_grad, 0.0)
    step = 1e-6
    grad = np.zeros(log_probs.shape)
    for index in itertools.product(*(range(size) for size in log_probs.shape)):
        if not finite[index[1]]:
            continue
        plus, minus = log_probs.copy(), log_probs.copy()
        plus[index] += step
        minus[index] -= step
        up = np.sum(weights * np.nan_to_num(alignments.nll(log_softmax(plus)), posinf=0.0))
        down = np.sum(weights * np.nan_to_num(alignments.nll(log_softmax(minus)), posinf=0.0))
        grad[index] = (up - down) / (2 * step)
    return grad


# -- cases ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Ctc:
    name: str
    classes: int
    frames: int
    targets: tuple[tuple[int, ...], ...]  # padded to a common length with -1
    input_lengths: tuple[int, ...]
    target_lengths: tuple[int, ...]
    blank: int = 0

    def __str__(self) -> str:
        return self.name

    @property
    def batch(self) -> int:
        return len(self.targets)

    def arrays(self, rng: np.random.Generator) -> tuple[Array, Array, Array, Array]:
        logits = rng.normal(0.0, 1.5, (self.frames, self.batch, self.classes))
        return (
            log_softmax(logits),
            np.array(self.targets, dtype=np.int64).reshape(self.batch, -1),
            np.array(self.input_lengths, dtype=np.int64),
            np.array(self.target_lengths, dtype=np.int64),
        )

    def alignments(self, targets: Array) -> Alignments:
        return Alignments.of(
            targets, np.array(self.input_lengths), np.array(self.target_lengths), self.classes, self.blank
        )


CASES = [
    # repeated labels (a blank must separate them), a full-length target, an empty one, and frames to spare
    Ctc("mixed", 4, 5, ((1, 1, -1), (2, 3, 1), (3, -1, -1), (2, 2, 2)), (5, 4, 2, 5), (2, 3, 0, 3)),
    # the blank is the last class; input lengths vary; a target exactly as long as its input allows
    Ctc("blank-last", 3, 4, ((0, 1), (1, 1), (0, 0)), (4, 3, 4), (2, 2, 1), blank=2),
    # no frames (empty target: loss 0; otherwise infinite), and a target too long for its input
    Ctc("infeasible", 3, 4, ((1, 2), (1, 1), (2, -1), (1, 2)), (0, 2, 0, 4), (0, 2, 1, 2)),
    Ctc("single", 2, 6, ((1,),), (6,), (1,)),
    # padding past the target lengths holds values that are no labels at all
    Ctc("junk-padding", 4, 4, ((3, 9, -7), (1, 2, 3)), (4, 4), (1, 2)),
]


def tensors(
    device: Device, arrays: tuple[Array, ...], dtype: DType = DType.F64
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    log_probs, targets, inputs, lengths = arrays
    int_dtype = device.backend.int_dtype
    return (
        make(log_probs.astype(dtype.numpy), device),
        make(targets, device, int_dtype),
        make(inputs, device, int_dtype),
        make(lengths, device, int_dtype),
    )


# -- forward -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [DType.F64, DType.F32], ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_ctc_loss_matches_reference(
    device: Device, rng: np.random.Generator, case: Ctc, dtype: DType
) -> None:
    arrays = case.arrays(rng)
    log_probs = arrays[0].astype(dtype.numpy)
    expected = case.alignments(arrays[1]).nll(log_probs.astype(np.float64))
    result = module.ctc_loss(*tensors(device, arrays, dtype), blank=case.blank, reduction="none")
    check(result, expected, dtype, scale=10)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_ctc_loss_default_matches_reference(device: Device, rng: np.random.Generator, case: Ctc) -> None:
    arrays = case.arrays(rng)
    expected = case.alignments(arrays[1]).nll(arrays[0])
    check(default(device, "ctc_loss", *tensors(device, arrays), case.blank), expected, DType.F64)


@pytest.mark.parametrize("case", CASES[:3], ids=str)
def test_ctc_loss_reductions(device: Device, rng: np.random.Generator, case: Ctc) -> None:
    arrays = case.arrays(rng)
    losses = case.alignments(arrays[1]).nll(arrays[0])
    args = tensors(device, arrays)
    check(module.ctc_loss(*args, blank=case.blank, reduction="sum"), np.array([losses.sum()]), DType.F64)
    divided = losses / np.maximum(np.array(case.target_lengths), 1)
    check(module.ctc_loss(*args, blank=case.blank), np.array([divided.mean()]), DType.F64)


def test_ctc_loss_lengths_as_sequences_and_other_int_dtypes(device: Device, rng: np.random.Generator) -> None:
    case = CASES[0]
    arrays = case.arrays(rng)
    expected = case.alignments(arrays[1]).nll(arrays[0])
    log_probs = make(arrays[0], device)
    targets = make(arrays[1].astype(np.int32), device, DType.I32)
    result = module.ctc_loss(
        log_probs, targets, list(case.input_lengths), case.target_lengths, reduction="none"
    )
    check(result, expected, DType.F64)
    lengths = make(arrays[3].astype(np.int32), device, DType.I32)
    inputs = make(arrays[2].astype(np.int32), device, DType.I32)
    check(default(device, "ctc_loss", log_probs, targets, inputs, lengths, 0), expected, DType.F64)


# -- backward ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", CASES, ids=str)
def test_ctc_loss_backward_matches_finite_differences(
    device: Device, rng: np.random.Generator, case: Ctc
) -> None:
    arrays = case.arrays(rng)
    output_grad = rng.uniform(0.5, 1.5, case.batch)
    alignments = case.alignments(arrays[1])
    expected = logits_gradient(alignments, arrays[0], output_grad)
    # an infinite loss has a NaN gradient within its input (as PyTorch's), zero past it
    impossible = ~np.isfinite(alignments.nll(arrays[0]))
    within = np.arange(case.frames)[:, None] < np.array(case.input_lengths)[None, :]
    expected[within & impossible[None, :]] = np.nan
    args = (*tensors(device, arrays), case.blank, make(output_grad, device))
    for implementation in (kernel, default):
        result = implementation(device, "ctc_loss_backward", *args)
        check(result, expected, DType.F64, scale=1e4)  # finite differences: ~1e-9 of error


def test_ctc_loss_backward_f32(device: Device, rng: np.random.Generator) -> None:
    case = CASES[0]
    arrays = case.arrays(rng)
    output_grad = rng.uniform(0.5, 1.5, case.batch)
    exact = kernel(
        device, "ctc_loss_backward", *tensors(device, arrays), case.blank, make(output_grad, device)
    )
    single = tensors(device, arrays, DType.F32)
    grad32 = make(output_grad.astype(np.float32), device)
    for implementation in (kernel, default):
        result = implementation(device, "ctc_loss_backward", *single, case.blank, grad32)
        check(result, as_f64(exact), DType.F32, scale=10)


def test_has_ctc_loss_backward(device: Device) -> None:
    assert isinstance(device.backend.has_ctc_loss_backward(), bool)
    assert ModuleOps.has_ctc_loss_backward(device.backend) is True


# -- PyTorch -------------------------------------------------------------------------------------------
def test_ctc_loss_matches_torch(device: Device, rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    frames, batch, classes, longest = 12, 6, 6, 5
    log_probs = log_softmax(rng.normal(0.0, 2.0, (frames, batch, classes)))
    targets = rng.integers(1, classes, (batch, longest))
    targets[1, :3] = 4  # repeats
    input_lengths = np.array([12, 9, 12, 0, 3, 7])
    target_lengths = np.array([5, 3, 0, 0, 3, 4])  # sample 4 cannot fit (infinite loss)
    output_grad = rng.uniform(-1.0, 1.0, batch)
    tensor = torch.tensor(log_probs, requires_grad=True)
    expected = torch.nn.functional.ctc_loss(
        tensor,
        torch.tensor(targets),
        torch.tensor(input_lengths),
        torch.tensor(target_lengths),
        reduction="none",
    )
    expected.backward(torch.tensor(output_grad))
    args = tensors(device, (log_probs, targets, input_lengths, target_lengths))
    check(module.ctc_loss(*args, reduction="none"), expected.detach().numpy(), DType.F64)
    check(default(device, "ctc_loss", *args, 0), expected.detach().numpy(), DType.F64)
    for implementation in (kernel, default):
        grad = implementation(device, "ctc_loss_backward", *args, 0, make(output_grad, device))
        check(grad, tensor.grad.numpy(), DType.F64)
    feasible = [0, 1, 2, 3, 5]
    sub = tensors(
        device, (log_probs[:, feasible], targets[feasible], input_lengths[feasible], target_lengths[feasible])
    )
    for reduction in ("mean", "sum"):
        torch_value = torch.nn.functional.ctc_loss(
            torch.tensor(log_probs[:, feasible]),
            torch.tensor(targets[feasible]),
            torch.tensor(input_lengths[feasible]),
            torch.tensor(target_lengths[feasible]),
            reduction=reduction,
        )
        check(module.ctc_loss(*sub, reduction=reduction), np.array([torch_value.item()]), DType.F64)


# -- errors --------------------------------------------------------------------------------------------
def test_ctc_loss_errors(device: Device) -> None:
    log_probs = make(np.full((4, 2, 3), -np.log(3.0)), device)
    int_dtype = device.backend.int_dtype

    def ints(values: Any) -> Tensor:
        return make(np.array(values), device, int_dtype)

    targets, lengths = ints([[1, 2], [2, 0]]), ints([2, 1])
    inputs = ints([4, 3])
    with pytest.raises(TypeError, match="ctc_loss: log_probs must be a Float tensor"):
        module.ctc_loss(targets, targets, inputs, lengths)
    with pytest.raises(TypeError, match="targets must be an Int tensor"):
        module.ctc_loss(log_probs, log_probs, inputs, lengths)
    with pytest.raises(ValueError, match=r"log_probs must have rank 3 \(\[time, batch, classes\]\)"):
        module.ctc_loss(make(np.zeros((4, 3)), device), targets, inputs, lengths)
    with pytest.raises(ValueError, match="targets of shape \\[3, 2\\] must have one row per sample"):
        module.ctc_loss(log_probs, ints([[1, 2], [2, 1], [1, 1]]), inputs, lengths)
    with pytest.raises(ValueError, match=r"input_lengths must have shape \[2\]"):
        module.ctc_loss(log_probs, targets, ints([4, 3, 2]), lengths)
    with pytest.raises(ValueError, match=r"input_lengths must lie in \[0, 4\], got 5 for sample 1"):
        module.ctc_loss(log_probs, targets, [4, 5], lengths)
    with pytest.raises(ValueError, match=r"target_lengths must lie in \[0, 2\], got 3 for sample 0"):
        module.ctc_loss(log_probs, targets, inputs, [3, 1])
    with pytest.raises(ValueError, match=r"target_lengths must lie in \[0, 2\], got -1"):
        module.ctc_loss(log_probs, targets, inputs, [-1, 1])
    with pytest.raises(ValueError, match=r"blank \(3\) must be a class of log_probs, in \[0, 3\)"):
        module.ctc_loss(log_probs, targets, inputs, lengths, blank=3)
    with pytest.raises(
        ValueError, match="target 1 holds 0 at position 0; labels must lie in \\[0, 3\\) and differ"
    ):
        module.ctc_loss(log_probs, ints([[1, 2], [0, 1]]), inputs, lengths)
    with pytest.raises(ValueError, match="target 0 holds 3 at position 1"):
        module.ctc_loss(log_probs, ints([[1, 3], [2, 0]]), inputs, lengths)
    with pytest.raises(ValueError, match="unknown reduction 'avg'"):
        module.ctc_loss(log_probs, targets, inputs, lengths, reduction="avg")
    with pytest.raises(TypeError, match="input_lengths must hold ints"):
        module.ctc_loss(log_probs, targets, [4.0, 3.0], lengths)  # type: ignore[list-item]
    with pytest.raises(TypeError, match="blank must be an int"):
        module.ctc_loss(log_probs, targets, inputs, lengths, blank=True)
