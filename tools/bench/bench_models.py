"""Training steps of the models a PyTorch user ports, ours against PyTorch, side by side in one process.

The CPU set (issue 40), with the same thread count on both sides:

- ``resnet``: a ResNet-style CNN (3x3 convolutions, BatchNorm, residual blocks of 32/64/128 channels,
  global average pooling), batch 64 of 32x32 RGB images, SGD with momentum 0.9;
- ``gpt``: a char-level GPT (vocabulary 65, 4 pre-norm layers, 4 heads, d 128, causal mask), batch
  32 x 64 characters, AdamW;
- ``lstm``: an LSTM classifier (embedding 64, hidden 128, last state to 10 classes), batch 64 x 30
  steps, gradient clipping to global norm 1.0, Adam.

The GPU set (issue 36), against PyTorch eager on the same GPU:

- ``resnet-gn``: ``bench_ddp.py``'s ResNet (a 64-channel stem, stages of 64/128/256 channels with two
  residual blocks each, GroupNorm with 8 groups), batch 128 of 32x32 images, SGD with momentum 0.9;
- ``transformer``: a decoder-only transformer (6 pre-norm layers, d_model 512, 8 heads, feed-forward
  2048, GELU, causal mask), batch 16 x 256 tokens of a vocabulary of 8192, AdamW.

Each step is forward, cross-entropy, backward and the optimizer's update; the two sides are timed in
alternating blocks (``_harness.compare``) and the medians compared. On a GPU every timed call ends by
waiting for its work, TF32 is off on both sides (PyTorch's matmul default; its cuDNN default allows TF32,
so a second row per model gives PyTorch's defaults against ours), and the CUDA kernel time of one step is
summed for both sides from CUPTI through ``torch.profiler``, which records CuPy's kernels too
(``--kernels N`` also prints each side's N costliest kernels), after every step was timed: CUPTI, once
attached, slows every later launch. ``--device`` picks our stack: ``ndarray``
(``Autodiff(NdArray())``), ``fusion`` (``Autodiff(Fusion(NdArray()))``), ``cuda`` (``Autodiff(Cuda())``),
``fusion-cuda`` (``Autodiff(Fusion(Cuda()))``).

Run: ``python tools/bench/bench_models.py [--device ndarray] [--models resnet,gpt,lstm] [--threads N]
[--quick] [--kernels N]`` (the GPU devices default to ``--models resnet-gn,transformer``;
``--threads`` defaults to NdArray's thread policy: ``BURN_NUM_THREADS``, else the cores the process may
run on).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from _harness import PAUSE_S, Row, compare, print_table

from burn_autodiff import Autodiff
from burn_backend import Device, Tensor, activation
from burn_ndarray import NdArray
from burn_ndarray._threads import num_threads
from burn_nn import (
    AdaptiveAvgPool2dConfig,
    BatchNormConfig,
    Conv2dConfig,
    EmbeddingConfig,
    GroupNormConfig,
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


# -- GPT (char-level on the CPU, the transformer on the GPU) -------------------------------------
GPT_SIZES = {"gpt": (65, 128, 4, 4, 64, 32), "transformer": (8192, 512, 8, 6, 256, 16)}
"""Per model: vocabulary, d_model, heads, layers, context and batch."""


class Gpt(Module):
    def __init__(
        self, vocab: int, d_model: int, heads: int, layers: int, context: int, device: Device
    ) -> None:
        self.tokens = EmbeddingConfig(vocab, d_model).init(device)
        self.positions = EmbeddingConfig(context, d_model).init(device)
        config = TransformerEncoderConfig(d_model, 4 * d_model, heads, layers, dropout=0.0, norm_first=True)
        self.encoder = config.init(device)
        self.norm = LayerNormConfig(d_model).init(device)
        self.head = LinearConfig(d_model, vocab).init(device)

    def forward(self, tokens: Tensor) -> Tensor:
        batch, length = tokens.dims()
        device = tokens.device
        positions = Tensor.arange(length, device=device).reshape([1, length]).repeat_dim(0, batch)
        x = self.tokens(tokens) + self.positions(positions)
        mask = generate_autoregressive_mask(batch, length, device)
        x = self.encoder(TransformerEncoderInput(x).mask_attn(mask))
        return self.head(self.norm(x))


class TorchGpt(TORCH.Module):
    def __init__(self, vocab: int, d_model: int, heads: int, layers: int, context: int) -> None:
        super().__init__()
        self.tokens = TORCH.Embedding(vocab, d_model)
        self.positions = TORCH.Embedding(context, d_model)
        layer = TORCH.TransformerEncoderLayer(
            d_model, heads, 4 * d_model, 0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = TORCH.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = TORCH.LayerNorm(d_model)
        self.head = TORCH.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        length = tokens.shape[1]
        x = self.tokens(tokens) + self.positions(torch.arange(length, device=tokens.device))
        mask = TORCH.Transformer.generate_square_subsequent_mask(length, device=tokens.device)
        return self.head(self.norm(self.encoder(x, mask=mask, is_causal=True)))


# -- the GPU ResNet (GroupNorm; bench_ddp.py's model) ---------------------------------------------------
class GnBlock(Module):
    def __init__(self, channels_in: int, channels: int, stride: int, device: Device) -> None:
        same = PaddingConfig2d.Explicit(1, 1)
        self.conv1 = Conv2dConfig(
            (channels_in, channels), (3, 3), (stride, stride), padding=same, bias=False
        ).init(device)
        self.norm1 = GroupNormConfig(8, channels).init(device)
        self.conv2 = Conv2dConfig((channels, channels), (3, 3), padding=same, bias=False).init(device)
        self.norm2 = GroupNormConfig(8, channels).init(device)
        self.skip: list[Any] = []
        if stride != 1 or channels_in != channels:
            self.skip = [
                Conv2dConfig((channels_in, channels), (1, 1), (stride, stride), bias=False).init(device)
            ]

    def forward(self, x: Tensor) -> Tensor:
        y = activation.relu(self.norm1(self.conv1(x)))
        y = self.norm2(self.conv2(y))
        return activation.relu(y + (self.skip[0](x) if self.skip else x))


class GnResNet(Module):
    def __init__(self, device: Device) -> None:
        same = PaddingConfig2d.Explicit(1, 1)
        self.stem = Conv2dConfig((3, 64), (3, 3), padding=same, bias=False).init(device)
        self.stem_norm = GroupNormConfig(8, 64).init(device)
        self.blocks: list[GnBlock] = []
        channels = 64
        for stage, width in enumerate((64, 128, 256)):
            for index in range(2):
                self.blocks.append(GnBlock(channels, width, 2 if stage and not index else 1, device))
                channels = width
        self.pool = AdaptiveAvgPool2dConfig((1, 1)).init()
        self.head = LinearConfig(256, 10).init(device)

    def forward(self, x: Tensor) -> Tensor:
        x = activation.relu(self.stem_norm(self.stem(x)))
        for block in self.blocks:
            x = block(x)
        return self.head(self.pool(x).flatten(1, 3))


class TorchGnBlock(TORCH.Module):
    def __init__(self, channels_in: int, channels: int, stride: int) -> None:
        super().__init__()
        self.conv1 = TORCH.Conv2d(channels_in, channels, 3, stride, 1, bias=False)
        self.norm1 = TORCH.GroupNorm(8, channels)
        self.conv2 = TORCH.Conv2d(channels, channels, 3, 1, 1, bias=False)
        self.norm2 = TORCH.GroupNorm(8, channels)
        self.skip = TORCH.Sequential()
        if stride != 1 or channels_in != channels:
            self.skip = TORCH.Sequential(TORCH.Conv2d(channels_in, channels, 1, stride, bias=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.norm1(self.conv1(x)))
        return torch.relu(self.norm2(self.conv2(y)) + self.skip(x))


class TorchGnResNet(TORCH.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = TORCH.Conv2d(3, 64, 3, 1, 1, bias=False)
        self.stem_norm = TORCH.GroupNorm(8, 64)
        blocks, channels = [], 64
        for stage, width in enumerate((64, 128, 256)):
            for index in range(2):
                blocks.append(TorchGnBlock(channels, width, 2 if stage and not index else 1))
                channels = width
        self.blocks = TORCH.Sequential(*blocks)
        self.head = TORCH.Linear(256, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.blocks(torch.relu(self.stem_norm(self.stem(x))))
        return self.head(x.mean((2, 3)))


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
TARGETS = {"resnet": "<= 2.0x", "gpt": "<= 1.4x", "lstm": "<= 1.5x", "resnet-gn": "<= 1.15x"}
TARGETS["transformer"] = "<= 1.6x"
GPU_MODELS = ("resnet-gn", "transformer")


def _steps(name: str, device: Device, torch_device: str, rng: np.random.Generator) -> tuple[Step, Step]:
    """Our step and PyTorch's (on ``torch_device``) for model ``name`` on the same data."""
    criterion = loss.CrossEntropyLossConfig().init(device)
    torch_loss = torch.nn.functional.cross_entropy
    clip = None
    model: Any
    torch_model: TORCH.Module
    if name in ("resnet", "resnet-gn"):
        batch = 64 if name == "resnet" else 128
        images = rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)
        labels = rng.integers(0, 10, batch)
        model, torch_model = (
            (ResNet(device), TorchResNet()) if name == "resnet" else (GnResNet(device), TorchGnResNet())
        )
        optim: Any = SgdConfig(momentum=MomentumConfig(0.9, 0.0, nesterov=False)).init()
        torch_model = torch_model.to(torch_device)
        torch_optim: torch.optim.Optimizer = torch.optim.SGD(torch_model.parameters(), lr=0.01, momentum=0.9)
        lr = 0.01
        data, flat_labels = images, labels
    elif name in GPT_SIZES:
        vocab, d_model, heads, layers, context, batch = GPT_SIZES[name]
        tokens = rng.integers(0, vocab, (batch, context + 1))
        model = Gpt(vocab, d_model, heads, layers, context, device)
        optim = AdamWConfig().init()
        torch_model = TorchGpt(vocab, d_model, heads, layers, context).to(torch_device)
        torch_optim = torch.optim.AdamW(torch_model.parameters(), lr=3e-4)
        lr = 3e-4
        data, flat_labels = tokens[:, :-1], tokens[:, 1:].reshape(-1)
    elif name == "lstm":
        tokens = rng.integers(0, LSTM_VOCAB, (64, STEPS))
        labels = rng.integers(0, CLASSES, 64)
        model = LstmClassifier(device)
        optim = AdamConfig(grad_clipping=GradientClippingConfig.GlobalNorm(1.0)).init()
        torch_model = TorchLstmClassifier().to(torch_device)
        torch_optim = torch.optim.Adam(torch_model.parameters(), lr=1e-3)
        lr, clip = 1e-3, 1.0
        data, flat_labels = tokens, labels
    else:
        raise SystemExit(f"bench_models: unknown model {name!r} ({', '.join(TARGETS)})")
    inputs, torch_inputs = Tensor.from_data(data, device), torch.from_numpy(data).to(torch_device)
    targets = Tensor.from_data(flat_labels, device)
    torch_targets = torch.from_numpy(flat_labels).to(torch_device)
    state = {"model": model}
    gpu = torch_device != "cpu"

    def ours() -> None:
        current = state["model"]
        logits = current(inputs)
        if logits.rank == 3:
            logits = logits.reshape([-1, logits.dims()[-1]])
        grads = GradientsParams.from_grads(criterion(logits, targets).backward(), current)
        state["model"] = optim.step(lr, current, grads)
        if gpu:
            device.sync()

    def theirs() -> None:
        torch_optim.zero_grad()
        logits = torch_model(torch_inputs)
        torch_loss(logits.reshape(-1, logits.shape[-1]), torch_targets).backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(torch_model.parameters(), clip)
        torch_optim.step()
        if gpu:
            torch.cuda.synchronize()

    return ours, theirs


def _device(name: str, threads: int) -> Device:
    if name == "ndarray":
        return Autodiff(NdArray(num_threads=threads)).device()
    if name in ("cuda", "fusion-cuda"):
        from burn_cuda import Cuda

        backend: Any = Cuda()
        if name == "fusion-cuda":
            from burn_fusion import Fusion

            backend = Fusion(backend)
        return Autodiff(backend).device()
    if name == "fusion":
        from burn_fusion import Fusion

        return Autodiff(Fusion(NdArray(num_threads=threads))).device()
    raise SystemExit(f"bench_models: unknown --device {name!r} (ndarray, fusion, cuda, fusion-cuda)")


def kernel_time(step: Step, steps: int, top: int) -> tuple[float, list[tuple[str, float, int]]]:
    """The CUDA kernel time of one ``step`` (seconds, the mean over ``steps``, recorded by CUPTI) and the
    ``top`` costliest kernels (name, seconds a step, launches a step)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as recorded:
        for _ in range(steps):
            step()
    totals: dict[str, list[float]] = {}
    for event in recorded.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            entry = totals.setdefault(event.name, [0.0, 0])
            entry[0] += event.device_time_total * 1e-6 / steps
            entry[1] += 1 / steps
    ranked = sorted(((name, t, round(n)) for name, (t, n) in totals.items()), key=lambda row: -row[1])
    return sum(t for _, t, _ in ranked), ranked[:top]


def host_profile(name: str, step: Step, steps: int, top: int) -> None:
    """Print the ``top`` functions of ``steps`` of our step by own host time and by time with callees
    (cProfile; the GPU's work is queued, so on a GPU this is where the host spends a step)."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        step()
    profiler.disable()
    for order in ("tottime", "cumtime"):
        print(f"\n{name}: our step's host time by {order}, {steps} steps")
        pstats.Stats(profiler).sort_stats(order).print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="ndarray", help="our stack: ndarray, fusion, cuda, fusion-cuda")
    parser.add_argument("--models", default=None, help=f"comma-separated, of: {', '.join(TARGETS)}")
    parser.add_argument("--threads", type=int, default=None, help="threads for both sides (CPU)")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (noisier)")
    parser.add_argument("--kernels", type=int, default=0, help="GPU: print each side's N costliest kernels")
    parser.add_argument(
        "--host-profile", type=int, default=0, help="print the N functions of our step costing most host time"
    )
    args = parser.parse_args()

    gpu = args.device in ("cuda", "fusion-cuda")
    models = args.models or (",".join(GPU_MODELS) if gpu else "resnet,gpt,lstm")
    threads = args.threads if args.threads is not None else num_threads()
    device = _device(args.device, threads)
    torch_device = "cuda" if gpu else "cpu"
    torch.set_num_threads(threads)
    device.seed(0)
    torch.manual_seed(0)
    rows: list[Row] = []
    kernel_rows: list[Row] = []
    steps: dict[str, tuple[Step, Step, int]] = {}
    repeat, number = (3, 3) if args.quick else (7, 5)
    # on a GPU: more steps a block and no pause between blocks (no CPU threads spin there, and an idle
    # pause lets clocks drop)
    number, pause = (number * 3, 0.0) if gpu else (number, PAUSE_S)
    for name in (name.strip() for name in models.split(",")):
        if gpu:  # TF32 off on both sides (ours has it off unless CUPY_TF32=1)
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
        ours, theirs = _steps(name, device, torch_device, np.random.default_rng(0))
        for _ in range(3 if gpu else 2):  # warm-up: kernels compile, plans build, caches fill
            ours()
            theirs()
        target = TARGETS.get(name, "")
        rows.append(compare(f"{name} training step", ours, theirs, "torch", target, repeat, number, pause))
        if gpu:
            torch.backends.cudnn.allow_tf32 = True  # PyTorch's default (its matmul default is off)
            rows.append(
                compare(f"{name} step, torch defaults", ours, theirs, "torch", "", repeat, number, pause)
            )
            torch.backends.cudnn.allow_tf32 = False
        steps[name] = (ours, theirs, number)
    # profiles last: CUPTI stays attached to the process after torch.profiler, and every later launch
    # costs more host time (the transformer's step, host-bound, took 42 ms after a profile, 25 ms before)
    for name, (ours, theirs, count) in steps.items():
        if args.host_profile:
            host_profile(name, ours, count, args.host_profile)
        if not gpu:
            continue
        ours_kernels, ours_top = kernel_time(ours, count, args.kernels)
        theirs_kernels, theirs_top = kernel_time(theirs, count, args.kernels)
        kernel_rows.append(Row(f"{name} CUDA kernel time", ours_kernels, theirs_kernels, "torch", "<= 1.1x"))
        for side, top in (("ours", ours_top), ("torch", theirs_top)):
            for kernel, seconds, launches in top:
                print(f"  {name} {side:5} {seconds * 1e6:9.1f} us {launches:5d}x  {kernel[:110]}")
    where = f"{args.device}, {threads} thread(s) a side" if not gpu else f"{args.device} (PyTorch eager CUDA)"
    print_table(f"Training steps on {where} (ratio = ours / PyTorch)", rows + kernel_rows)


if __name__ == "__main__":
    main()
