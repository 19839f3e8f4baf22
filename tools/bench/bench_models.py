"""Training steps of three models a PyTorch user ports (issue 40's CPU set), ours against PyTorch, side by
side in one process with the same thread count on both sides:

- ``resnet``: a ResNet-style CNN (3x3 convolutions, BatchNorm, residual blocks of 32/64/128 channels,
  global average pooling), batch 64 of 32x32 RGB images, SGD with momentum 0.9;
- ``gpt``: a char-level GPT (vocabulary 65, 4 pre-norm layers, 4 heads, d 128, causal mask), batch
  32 x 64 characters, AdamW;
- ``lstm``: an LSTM classifier (embedding 64, hidden 128, last state to 10 classes), batch 64 x 30
  steps, gradient clipping to global norm 1.0, Adam.

Each step is forward, cross-entropy, backward and the optimizer's update; the two sides are timed in
alternating blocks (``_harness.compare``) and the medians compared. ``--device`` picks our stack
(``ndarray``: ``Autodiff(NdArray())``; ``fusion``: ``Autodiff(Fusion(NdArray()))``); GPU stacks are
meant to join as further ``--device`` values against PyTorch on that GPU.

Run: ``python tools/bench/bench_models.py [--device ndarray] [--models resnet,gpt,lstm] [--threads N]
[--quick]`` (``--threads`` defaults to NdArray's thread policy: ``BURN_NUM_THREADS``, else the cores
the process may run on).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from _harness import Row, compare, print_table

from burn_autodiff import Autodiff
from burn_backend import Device, Tensor
from burn_ndarray import NdArray
from burn_ndarray._threads import num_threads
from burn_nn import (
    BatchNormConfig,
    Conv2dConfig,
    EmbeddingConfig,
    LayerNormConfig,
    LinearConfig,
    LstmConfig,
    Module,
    PaddingConfig2d,
    Relu,
    TransformerEncoderConfig,
    TransformerEncoderInput,
    generate_autoregressive_mask,
    loss,
)
from burn_nn.optim import (
    AdamConfig,
    AdamWConfig,
    GradientClippingConfig,
    GradientsParams,
    MomentumConfig,
    SgdConfig,
)

Step = Callable[[], None]
TORCH = torch.nn


# -- ResNet-style CNN ----------------------------------------------------------------------------------
class Block(Module):
    """conv-bn-relu-conv-bn plus the input (through a 1x1 conv and bn where the shape changes)."""

    def __init__(self, channels_in: int, channels: int, stride: int, device: Device) -> None:
        pad = PaddingConfig2d.Explicit(1, 1)
        self.conv1 = Conv2dConfig(
            (channels_in, channels), (3, 3), (stride, stride), padding=pad, bias=False
        ).init(device)
        self.bn1 = BatchNormConfig(channels).init(device)
        self.conv2 = Conv2dConfig((channels, channels), (3, 3), padding=pad, bias=False).init(device)
        self.bn2 = BatchNormConfig(channels).init(device)
        self.relu = Relu()
        self.shortcut: list[Any] = []
        if stride != 1 or channels_in != channels:
            conv = Conv2dConfig((channels_in, channels), (1, 1), (stride, stride), bias=False).init(device)
            self.shortcut = [conv, BatchNormConfig(channels).init(device)]

    def forward(self, x: Tensor) -> Tensor:
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        skip = x
        for layer in self.shortcut:
            skip = layer(skip)
        return self.relu(y + skip)


class ResNet(Module):
    def __init__(self, device: Device) -> None:
        self.stem = Conv2dConfig((3, 32), (3, 3), padding=PaddingConfig2d.Explicit(1, 1), bias=False).init(
            device
        )
        self.bn = BatchNormConfig(32).init(device)
        self.relu = Relu()
        self.blocks = [Block(32, 32, 1, device), Block(32, 64, 2, device), Block(64, 128, 2, device)]
        self.head = LinearConfig(128, 10).init(device)

    def forward(self, x: Tensor) -> Tensor:
        x = self.relu(self.bn(self.stem(x)))
        for block in self.blocks:
            x = block(x)
        return self.head(x.mean_dim(3).mean_dim(2).flatten(1, 3))


class TorchBlock(TORCH.Module):
    def __init__(self, channels_in: int, channels: int, stride: int) -> None:
        super().__init__()
        self.conv1 = TORCH.Conv2d(channels_in, channels, 3, stride, 1, bias=False)
        self.bn1 = TORCH.BatchNorm2d(channels)
        self.conv2 = TORCH.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.bn2 = TORCH.BatchNorm2d(channels)
        self.shortcut = TORCH.Sequential()
        if stride != 1 or channels_in != channels:
            self.shortcut = TORCH.Sequential(
                TORCH.Conv2d(channels_in, channels, 1, stride, bias=False), TORCH.BatchNorm2d(channels)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(y)) + self.shortcut(x))


class TorchResNet(TORCH.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = TORCH.Conv2d(3, 32, 3, 1, 1, bias=False)
        self.bn = TORCH.BatchNorm2d(32)
        self.blocks = TORCH.Sequential(TorchBlock(32, 32, 1), TorchBlock(32, 64, 2), TorchBlock(64, 128, 2))
        self.head = TORCH.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(torch.relu(self.bn(self.stem(x))))
        return self.head(x.mean((2, 3)))


# -- char-level GPT ------------------------------------------------------------------------------------
VOCAB, D_MODEL, HEADS, LAYERS, CONTEXT = 65, 128, 4, 4, 64


class Gpt(Module):
    def __init__(self, device: Device) -> None:
        self.tokens = EmbeddingConfig(VOCAB, D_MODEL).init(device)
        self.positions = EmbeddingConfig(CONTEXT, D_MODEL).init(device)
        config = TransformerEncoderConfig(D_MODEL, 4 * D_MODEL, HEADS, LAYERS, dropout=0.0, norm_first=True)
        self.encoder = config.init(device)
        self.norm = LayerNormConfig(D_MODEL).init(device)
        self.head = LinearConfig(D_MODEL, VOCAB).init(device)

    def forward(self, tokens: Tensor) -> Tensor:
        batch, length = tokens.dims()
        device = tokens.device
        positions = Tensor.arange(length, device=device).reshape([1, length]).repeat_dim(0, batch)
        x = self.tokens(tokens) + self.positions(positions)
        mask = generate_autoregressive_mask(batch, length, device)
        x = self.encoder(TransformerEncoderInput(x).mask_attn(mask))
        return self.head(self.norm(x))


class TorchGpt(TORCH.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tokens = TORCH.Embedding(VOCAB, D_MODEL)
        self.positions = TORCH.Embedding(CONTEXT, D_MODEL)
        layer = TORCH.TransformerEncoderLayer(
            D_MODEL, HEADS, 4 * D_MODEL, 0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = TORCH.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.norm = TORCH.LayerNorm(D_MODEL)
        self.head = TORCH.Linear(D_MODEL, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        length = tokens.shape[1]
        x = self.tokens(tokens) + self.positions(torch.arange(length))
        mask = TORCH.Transformer.generate_square_subsequent_mask(length)
        return self.head(self.norm(self.encoder(x, mask=mask, is_causal=True)))


# -- LSTM classifier -----------------------------------------------------------------------------------
LSTM_VOCAB, EMBED, HIDDEN, CLASSES, STEPS = 100, 64, 128, 10, 30


class LstmClassifier(Module):
    def __init__(self, device: Device) -> None:
        self.embedding = EmbeddingConfig(LSTM_VOCAB, EMBED).init(device)
        self.lstm = LstmConfig(EMBED, HIDDEN, True).init(device)
        self.head = LinearConfig(HIDDEN, CLASSES).init(device)

    def forward(self, tokens: Tensor) -> Tensor:
        _, state = self.lstm(self.embedding(tokens))
        return self.head(state.hidden)


class TorchLstmClassifier(TORCH.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embedding = TORCH.Embedding(LSTM_VOCAB, EMBED)
        self.lstm = TORCH.LSTM(EMBED, HIDDEN, batch_first=True)
        self.head = TORCH.Linear(HIDDEN, CLASSES)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        _, (hidden, _) = self.lstm(self.embedding(tokens))
        return self.head(hidden[-1])


# -- steps ---------------------------------------------------------------------------------------------
def _steps(name: str, device: Device, rng: np.random.Generator) -> tuple[Step, Step, str]:
    """Our step and PyTorch's for model ``name`` on the same data, and the issue's target."""
    criterion = loss.CrossEntropyLossConfig().init(device)
    torch_loss = torch.nn.functional.cross_entropy
    if name == "resnet":
        images = rng.standard_normal((64, 3, 32, 32)).astype(np.float32)
        labels = rng.integers(0, 10, 64)
        model: Any = ResNet(device)
        optim = SgdConfig(momentum=MomentumConfig(0.9, 0.0, nesterov=False)).init()
        torch_model: TORCH.Module = TorchResNet()
        torch_optim: torch.optim.Optimizer = torch.optim.SGD(torch_model.parameters(), lr=0.01, momentum=0.9)
        lr, clip, target = 0.01, None, "<= 2.0x"
        inputs, torch_inputs = Tensor.from_data(images, device), torch.from_numpy(images)
        flat_labels = labels
    elif name == "gpt":
        tokens = rng.integers(0, VOCAB, (32, CONTEXT + 1))
        model = Gpt(device)
        optim = AdamWConfig().init()
        torch_model = TorchGpt()
        torch_optim = torch.optim.AdamW(torch_model.parameters(), lr=3e-4)
        lr, clip, target = 3e-4, None, "<= 1.4x"
        inputs, torch_inputs = Tensor.from_data(tokens[:, :-1], device), torch.from_numpy(tokens[:, :-1])
        flat_labels = tokens[:, 1:].reshape(-1)
    elif name == "lstm":
        tokens = rng.integers(0, LSTM_VOCAB, (64, STEPS))
        labels = rng.integers(0, CLASSES, 64)
        model = LstmClassifier(device)
        optim = AdamConfig(grad_clipping=GradientClippingConfig.GlobalNorm(1.0)).init()
        torch_model = TorchLstmClassifier()
        torch_optim = torch.optim.Adam(torch_model.parameters(), lr=1e-3)
        lr, clip, target = 1e-3, 1.0, "<= 1.5x"
        inputs, torch_inputs = Tensor.from_data(tokens, device), torch.from_numpy(tokens)
        flat_labels = labels
    else:
        raise SystemExit(f"bench_models: unknown model {name!r} (resnet, gpt, lstm)")
    targets, torch_targets = Tensor.from_data(flat_labels, device), torch.from_numpy(flat_labels)
    state = {"model": model}

    def ours() -> None:
        current = state["model"]
        logits = current(inputs)
        if logits.rank == 3:
            logits = logits.reshape([-1, logits.dims()[-1]])
        grads = GradientsParams.from_grads(criterion(logits, targets).backward(), current)
        state["model"] = optim.step(lr, current, grads)

    def theirs() -> None:
        torch_optim.zero_grad()
        logits = torch_model(torch_inputs)
        torch_loss(logits.reshape(-1, logits.shape[-1]), torch_targets).backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(torch_model.parameters(), clip)
        torch_optim.step()

    return ours, theirs, target


def _device(name: str, threads: int) -> Device:
    if name == "ndarray":
        return Autodiff(NdArray(num_threads=threads)).device()
    if name == "fusion":
        from burn_fusion import Fusion

        return Autodiff(Fusion(NdArray(num_threads=threads))).device()
    raise SystemExit(f"bench_models: --device {name!r} is not measured yet (ndarray, fusion)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="ndarray", help="our stack: ndarray (default) or fusion")
    parser.add_argument("--models", default="resnet,gpt,lstm", help="comma-separated: resnet, gpt, lstm")
    parser.add_argument("--threads", type=int, default=None, help="threads for both sides")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (noisier)")
    args = parser.parse_args()

    threads = args.threads if args.threads is not None else num_threads()
    device = _device(args.device, threads)
    torch.set_num_threads(threads)
    device.seed(0)
    torch.manual_seed(0)
    rows: list[Row] = []
    for name in args.models.split(","):
        ours, theirs, target = _steps(name.strip(), device, np.random.default_rng(0))
        for _ in range(2):  # warm-up: kernels compile, buffers and caches fill
            ours()
            theirs()
        repeat, number = (3, 3) if args.quick else (7, 5)
        rows.append(compare(f"{name} training step", ours, theirs, "torch", target, repeat, number))
    print_table(
        f"Training steps on {args.device}, {threads} thread(s) a side (ratio = ours / PyTorch CPU)", rows
    )


if __name__ == "__main__":
    main()
