"""The Burn Book's guide model on ``Autodiff(NdArray())`` against PyTorch CPU eager, side by side in one
run: each of its module ops forward and backward (kernel level, NdArray f32), then the whole training step
(forward, backward, Adam update) through the functional API at batch 64, and last the guide example's own
``burn_nn`` model, loss and ``Adam`` against the same ``torch.nn`` model.

The model: images ``[64, 28, 28]`` reshaped to ``[B, 1, 28, 28]``, conv2d 1->8 3x3, dropout, conv2d 8->16
3x3, dropout, relu, adaptive_avg_pool2d to 8x8, reshape ``[B, 1024]``, linear 1024->512, dropout, relu,
linear 512->10, cross-entropy (log_softmax, gather of the targets, mean). Dropout is a Bernoulli mask
multiply, scaled by 2, as ``burn_nn.Dropout`` does it; PyTorch's Bernoulli sampling is slow on CPU, so
the "fixed masks" rows draw the masks once on both sides and compare the compute alone (and check that
both sides give the same loss and gradients). Adam is written out on the inner tensors here (as an
optimizer does it: from the gradients to new parameters), against ``torch.optim.Adam``. "Derived" rows
are differences of the medians of two other rows.

Run: ``python tools/bench/bench_guide_ops.py [--quick]``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _harness import Row, arguments, compare, print_table

from burn.nn import loss
from burn.optim import AdamConfig, GradientsParams
from burn_autodiff import Autodiff
from burn_backend import ConvOptions, Distribution, Tensor, module
from burn_backend.activation import log_softmax, relu
from burn_ndarray import NdArray

BATCH = 64
TARGET_OP, TARGET_STEP = "<= 2x", "<= 2x"
CONV = ConvOptions((1, 1), (0, 0), (1, 1), 1)


def _derived(name: str, whole: Row, part: Row, target: str) -> Row:
    """``whole - part`` on both sides (e.g. backward = forward and backward - forward)."""
    return Row(name, whole.ours - part.ours, whole.reference - part.reference, whole.reference_name, target)


def _kernel_rows(repeat: int, number: int) -> list[Row]:
    """Each module op of the model, forward and backward, on the NdArray kernels against ATen's."""
    backend = NdArray()
    device = backend.device()
    functional = torch.nn.functional
    rng = np.random.default_rng(0)
    aten = torch.ops.aten
    rows = []

    def conv_rows(label: str, x: np.ndarray[Any, Any], w: np.ndarray[Any, Any], needs_x: bool) -> None:
        bias = np.zeros(w.shape[0], np.float32)
        tx, tw, tb = (Tensor.from_numpy(a, device) for a in (x, w, bias))
        rx, rw, rb = (torch.from_numpy(a) for a in (x, w, bias))
        y = module.conv2d(tx, tw, tb, CONV).to_numpy()
        np.testing.assert_allclose(y, functional.conv2d(rx, rw, rb).numpy(), atol=1e-4)
        g = rng.standard_normal(y.shape).astype(np.float32)
        rg = torch.from_numpy(g)
        rows.append(
            compare(
                f"{label} forward",
                lambda: module.conv2d(tx, tw, tb, CONV),
                lambda: functional.conv2d(rx, rw, rb),
                "torch",
                TARGET_OP,
                repeat,
                number,
            )
        )
        stride, padding, dilation = [1, 1], [0, 0], [1, 1]
        mask = [needs_x, True, True]

        def ours() -> None:
            if needs_x:
                backend.conv2d_x_backward(x, w, g, CONV)
            backend.conv2d_weight_backward(x, w, g, CONV)
            backend.conv2d_bias_backward(x, bias, g)

        def theirs() -> None:
            aten.convolution_backward(
                rg, rx, rw, [w.shape[0]], stride, padding, dilation, False, [0, 0], 1, mask
            )

        expected = aten.convolution_backward(
            rg, rx, rw, [w.shape[0]], stride, padding, dilation, False, [0, 0], 1, [True, True, True]
        )
        np.testing.assert_allclose(backend.conv2d_x_backward(x, w, g, CONV), expected[0].numpy(), atol=1e-3)
        np.testing.assert_allclose(
            backend.conv2d_weight_backward(x, w, g, CONV), expected[1].numpy(), rtol=1e-4, atol=1e-2
        )
        np.testing.assert_allclose(backend.conv2d_bias_backward(x, bias, g), expected[2].numpy(), atol=1e-2)
        what = "x, w, b" if needs_x else "w, b"
        rows.append(compare(f"{label} backward ({what})", ours, theirs, "torch", TARGET_OP, repeat, number))

    conv_rows("conv1 1->8, 28x28", rng.standard_normal((BATCH, 1, 28, 28)).astype(np.float32),
              rng.standard_normal((8, 1, 3, 3)).astype(np.float32), needs_x=False)  # fmt: skip
    conv_rows("conv2 8->16, 26x26", rng.standard_normal((BATCH, 8, 26, 26)).astype(np.float32),
              rng.standard_normal((16, 8, 3, 3)).astype(np.float32), needs_x=True)  # fmt: skip

    def pool_rows(label: str, size: int) -> None:
        x = rng.standard_normal((BATCH, 16, size, size)).astype(np.float32)
        tx, rx = Tensor.from_numpy(x, device), torch.from_numpy(x)
        pooled = module.adaptive_avg_pool2d(tx, 8).to_numpy()
        np.testing.assert_allclose(pooled, functional.adaptive_avg_pool2d(rx, 8).numpy(), atol=1e-6)
        g = rng.standard_normal(pooled.shape).astype(np.float32)
        rg = torch.from_numpy(g)
        expected = aten._adaptive_avg_pool2d_backward(rg, rx).numpy()
        np.testing.assert_allclose(backend.adaptive_avg_pool2d_backward(x, g), expected, atol=1e-6)
        rows.append(
            compare(
                f"{label} forward",
                lambda: module.adaptive_avg_pool2d(tx, 8),
                lambda: functional.adaptive_avg_pool2d(rx, 8),
                "torch",
                TARGET_OP,
                repeat,
                number,
            )
        )
        rows.append(
            compare(
                f"{label} backward",
                lambda: backend.adaptive_avg_pool2d_backward(x, g),
                lambda: aten._adaptive_avg_pool2d_backward(rg, rx),
                "torch",
                TARGET_OP,
                repeat,
                number,
            )
        )

    pool_rows("adaptive pool 24->8", 24)  # the model's: windows of 3
    pool_rows("adaptive pool 26->8", 26)  # overlapping windows of 4 or 5
    p = rng.standard_normal((BATCH, 16, 24, 24)).astype(np.float32)
    rows.append(
        compare(
            "bernoulli mask 64x16x24x24",
            lambda: Tensor.random(p.shape, Distribution.bernoulli(0.5), device),
            lambda: torch.empty(p.shape).bernoulli_(0.5),
            "torch",
            TARGET_OP,
            repeat,
            number,
        )
    )
    return rows


class _Guide:
    """The guide model's parameters on both sides, one forward + backward + Adam step each.

    With ``fixed_masks`` the dropout masks are drawn once and reused on both sides (PyTorch's Bernoulli
    sampling is slow and noisy on CPU, so this compares the compute alone).
    """

    def __init__(self, fixed_masks: bool = False) -> None:
        self.device = Autodiff(NdArray()).device()
        rng = np.random.default_rng(1)

        def uniform(shape: tuple[int, ...], fan_in: int) -> np.ndarray[Any, Any]:
            bound = 1.0 / np.sqrt(fan_in)
            return rng.uniform(-bound, bound, shape).astype(np.float32)

        # burn's linear weight is [d_in, d_out]; torch's is [d_out, d_in]
        arrays = [
            uniform((8, 1, 3, 3), 9), uniform((8,), 9),
            uniform((16, 8, 3, 3), 72), uniform((16,), 72),
            uniform((1024, 512), 1024), uniform((512,), 1024),
            uniform((512, 10), 512), uniform((10,), 512),
        ]  # fmt: skip
        self.params = [Tensor.from_numpy(a, self.device).require_grad() for a in arrays]
        self.moments = [
            (Tensor.zeros(a.shape, self.device).inner(), Tensor.zeros(a.shape, self.device).inner())
            for a in arrays
        ]
        self.time = 0
        torch_arrays = [a.T.copy() if a.ndim == 2 else a for a in arrays]
        self.torch_params = [torch.tensor(a, requires_grad=True) for a in torch_arrays]
        self.optimizer = torch.optim.Adam(self.torch_params, lr=1e-4)
        self.images = rng.standard_normal((BATCH, 28, 28)).astype(np.float32)
        self.targets = rng.integers(0, 10, BATCH)
        self.x = Tensor.from_numpy(self.images, self.device)
        self.y = Tensor.from_numpy(self.targets.reshape(BATCH, 1).astype(np.int64), self.device)
        self.tx = torch.from_numpy(self.images)
        self.ty = torch.from_numpy(self.targets)
        self.masks: list[Tensor] = []
        self.torch_masks: list[torch.Tensor] = []
        if fixed_masks:
            shapes = [(BATCH, 8, 26, 26), (BATCH, 16, 24, 24), (BATCH, 512)]
            scaled = [(rng.random(shape) < 0.5).astype(np.float32) * 2 for shape in shapes]
            self.masks = [Tensor.from_numpy(mask, self.device) for mask in scaled]
            self.torch_masks = [torch.from_numpy(mask) for mask in scaled]

    def _dropout(self, x: Tensor, layer: int) -> Tensor:
        if self.masks:
            return x * self.masks[layer]
        keep = Tensor.random(x.dims(), Distribution.bernoulli(0.5), x.device, x.dtype)
        return x * (keep * 2.0)

    def _torch_dropout(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        if self.torch_masks:
            return x * self.torch_masks[layer]
        return torch.nn.functional.dropout(x, 0.5)

    def forward(self) -> Tensor:
        w1, b1, w2, b2, w3, b3, w4, b4 = self.params
        x = self.x.reshape([BATCH, 1, 28, 28])
        x = module.conv2d(x, w1, b1, CONV)
        x = self._dropout(x, 0)
        x = module.conv2d(x, w2, b2, CONV)
        x = self._dropout(x, 1)
        x = relu(x)
        x = module.adaptive_avg_pool2d(x, 8)
        x = x.reshape([BATCH, 16 * 8 * 8])
        x = module.linear(x, w3, b3)
        x = self._dropout(x, 2)
        x = relu(x)
        x = module.linear(x, w4, b4)
        return -log_softmax(x, 1).gather(1, self.y).mean()

    def backward(self) -> list[Tensor]:
        grads = self.forward().backward()
        return [p.grad(grads) for p in self.params]  # type: ignore[misc]

    def adam(self, grads: list[Tensor], lr: float = 1e-4, b1: float = 0.9, b2: float = 0.999) -> None:
        self.time += 1
        correction1, correction2 = 1 - b1**self.time, 1 - b2**self.time
        for i, (param, grad) in enumerate(zip(self.params, grads)):
            m, v = self.moments[i]
            m = m * b1 + grad * (1 - b1)
            v = v * b2 + grad * grad * (1 - b2)
            self.moments[i] = (m, v)
            update = (m / correction1) / ((v / correction2).sqrt() + 1e-8)
            self.params[i] = Tensor.from_inner(param.inner() - update * lr, self.device).require_grad()

    def step(self) -> None:
        self.adam(self.backward())

    def torch_forward(self) -> torch.Tensor:
        w1, b1, w2, b2, w3, b3, w4, b4 = self.torch_params
        functional = torch.nn.functional
        x = self.tx.reshape(BATCH, 1, 28, 28)
        x = self._torch_dropout(functional.conv2d(x, w1, b1), 0)
        x = functional.relu(self._torch_dropout(functional.conv2d(x, w2, b2), 1))
        x = functional.adaptive_avg_pool2d(x, 8).reshape(BATCH, 1024)
        x = functional.relu(self._torch_dropout(functional.linear(x, w3, b3), 2))
        return functional.cross_entropy(functional.linear(x, w4, b4), self.ty)

    def torch_backward(self) -> None:
        self.optimizer.zero_grad()
        self.torch_forward().backward()

    def torch_step(self) -> None:
        self.torch_backward()
        self.optimizer.step()


def _check(guide: _Guide) -> None:
    """With the same masks, both sides compute the same loss and gradients (f32 tolerance)."""
    np.testing.assert_allclose(guide.forward().into_scalar(), guide.torch_forward().item(), rtol=1e-5)
    grads = guide.backward()
    guide.torch_backward()
    for ours, theirs in zip(grads, guide.torch_params):
        assert theirs.grad is not None
        expected = theirs.grad.numpy()
        expected = expected.T if expected.ndim == 2 else expected
        np.testing.assert_allclose(ours.to_numpy(), expected, rtol=1e-4, atol=1e-5)


def _step_rows(repeat: int, number: int) -> list[Row]:
    fixed = _Guide(fixed_masks=True)
    _check(fixed)
    fixed_forward = compare(
        "fixed masks: forward", fixed.forward, fixed.torch_forward, "torch", TARGET_STEP, repeat, number
    )
    fixed_both = compare(
        "fixed masks: forward + backward",
        fixed.backward,
        fixed.torch_backward,
        "torch",
        TARGET_STEP,
        repeat,
        number,
    )
    guide = _Guide()
    forward = compare(
        "guide forward (tracked)", guide.forward, guide.torch_forward, "torch", TARGET_STEP, repeat, number
    )
    both = compare(
        "guide forward + backward",
        guide.backward,
        guide.torch_backward,
        "torch",
        TARGET_STEP,
        repeat,
        number,
    )
    step = compare(
        "guide step (fwd + bwd + Adam)", guide.step, guide.torch_step, "torch", TARGET_STEP, repeat, number
    )
    return [
        fixed_forward,
        _derived("fixed masks: backward (derived)", fixed_both, fixed_forward, TARGET_STEP),
        fixed_both,
        forward,
        _derived("guide backward (derived)", both, forward, TARGET_STEP),
        _derived("guide Adam update (derived)", step, both, TARGET_STEP),
        both,
        step,
    ]


def _module_rows(repeat: int, number: int) -> list[Row]:
    """The guide example's own model (``examples/guide/model.py``: burn_nn layers, ``CrossEntropyLoss``,
    ``Adam``) against the same ``torch.nn`` model with ``torch.optim.Adam``: one training step each."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "guide"))
    from model import ModelConfig  # the example's folder is on the path only now

    device = Autodiff(NdArray()).device()
    device.seed(0)
    rng = np.random.default_rng(2)
    images = rng.standard_normal((BATCH, 28, 28)).astype(np.float32)
    labels = rng.integers(0, 10, BATCH)
    x, targets = Tensor.from_numpy(images, device), Tensor.from_numpy(labels, device)
    state = {"model": ModelConfig(num_classes=10, hidden_size=512).init(device)}
    optim = AdamConfig().init()
    criterion = loss.CrossEntropyLossConfig().init(device)

    def ours() -> None:
        model = state["model"]
        batch_loss = criterion(model(x), targets)
        grads = GradientsParams.from_grads(batch_loss.backward(), model)
        state["model"] = optim.step(1e-3, model, grads)

    nn = torch.nn
    reference = nn.Sequential(
        nn.Conv2d(1, 8, 3), nn.Dropout(0.5), nn.Conv2d(8, 16, 3), nn.Dropout(0.5), nn.ReLU(),
        nn.AdaptiveAvgPool2d(8), nn.Flatten(), nn.Linear(1024, 512), nn.Dropout(0.5), nn.ReLU(),
        nn.Linear(512, 10),
    )  # fmt: skip
    optimizer = torch.optim.Adam(reference.parameters(), lr=1e-3)
    tx, ty = torch.from_numpy(images).reshape(BATCH, 1, 28, 28), torch.from_numpy(labels)

    def theirs() -> None:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(reference(tx), ty).backward()
        optimizer.step()

    step = compare("burn_nn guide model: train step", ours, theirs, "torch", TARGET_STEP, repeat, number)
    return [step]


def main() -> None:
    args = arguments(__doc__ or "")
    repeat = 3 if args.quick else 7
    torch.manual_seed(0)
    kernels = _kernel_rows(repeat, 10 if args.quick else 20)
    print_table("Guide-model module ops, NdArray f32 kernels (ratio = our time / PyTorch CPU time)", kernels)
    steps = _step_rows(repeat, 5 if args.quick else 10) + _module_rows(repeat, 5 if args.quick else 10)
    print_table("Guide-model training step, Autodiff(NdArray()) (ratio = our time / PyTorch CPU time)", steps)


if __name__ == "__main__":
    main()
