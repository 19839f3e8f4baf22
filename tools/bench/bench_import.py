"""burn-import against the tools a user would pick instead, measured side by side in one run:

- a ResNet-18-sized CNN (batch 8, f32, 224x224) imported from ONNX and run on NdArray, vs onnxruntime
  (CPU) and PyTorch eager;
- reading resnet50-sized ``.pt`` weights (materialized in memory) vs ``torch.load(weights_only=True)``;
- reading a safetensors file vs the ``safetensors`` package's NumPy loader;
- (``--only onnx-large``) a ResNet-50 (batch 8, 224x224) and a BERT-base-sized encoder (12 layers,
  d 768, batch 8 x 128, with an attention mask) imported from ONNX, vs onnxruntime on the same number
  of threads, medians of interleaved runs.

The weights rows are medians of interleaved runs (wall time, and ``time.process_time`` in brackets).
Run: ``BURN_DEVICE=ndarray python tools/bench/bench_import.py [--repeat N] [--size 224]
[--only weights|cnn|onnx-large]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from burn_backend import Tensor, default_device


def timed(fn: Callable[[], Any], repeat: int, warmup: int = 1) -> float:
    """The median wall time of ``fn`` over ``repeat`` runs, after ``warmup`` runs."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(
    fns: dict[str, Callable[[], Any]], repeat: int, warmup: int = 2
) -> dict[str, tuple[float, float]]:
    """Median wall and CPU (``time.process_time``) seconds of each function, run in turns (each round
    in a rotated order) so that the load of a shared machine falls on all of them alike."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    names = list(fns)
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for i in range(repeat):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            start, start_cpu = time.perf_counter(), time.process_time()
            result = fns[name]()
            wall[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
            del result
    return {name: (statistics.median(wall[name]), statistics.median(cpu[name])) for name in names}


class BasicBlock(torch.nn.Module):
    def __init__(self, inp: int, out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(inp, out, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(out)
        self.conv2 = torch.nn.Conv2d(out, out, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(out)
        self.down = None
        if stride != 1 or inp != out:
            self.down = torch.nn.Sequential(
                torch.nn.Conv2d(inp, out, 1, stride, bias=False), torch.nn.BatchNorm2d(out)
            )

    def forward(self, x: Any) -> Any:
        skip = x if self.down is None else self.down(x)
        return torch.relu(skip + self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x))))))


class ResNet18(torch.nn.Module):
    """ResNet-18's architecture (11.7M parameters), as torchvision's, written out here."""

    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.stem = torch.nn.Sequential(
            torch.nn.Conv2d(3, 64, 7, 2, 3, bias=False),
            torch.nn.BatchNorm2d(64),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(3, 2, 1),
        )
        layers, inp = [], 64
        for out, stride in [(64, 1), (128, 2), (256, 2), (512, 2)]:
            layers += [BasicBlock(inp, out, stride), BasicBlock(out, out, 1)]
            inp = out
        self.layers = torch.nn.Sequential(*layers)
        self.fc = torch.nn.Linear(512, classes)

    def forward(self, x: Any) -> Any:
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


def bench_cnn(folder: Path, repeat: int, size: int) -> None:
    import onnxruntime as ort

    import burn_import.onnx as burn_onnx

    torch.manual_seed(0)
    net = ResNet18().eval()
    x = torch.randn(8, 3, size, size)
    path = folder / "resnet18.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(net, (x,), str(path), dynamo=False, input_names=["x"], opset_version=17)
    device = default_device()
    model = burn_onnx.load(path, device)
    inputs = Tensor.from_numpy(x.numpy(), device)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feeds = {"x": x.numpy()}
    ours = model(inputs).to_numpy()
    reference = session.run(None, feeds)[0]
    error = float(np.abs(ours - reference).max())
    t_ours = timed(lambda: model(inputs).to_numpy(), repeat)
    t_ort = timed(lambda: session.run(None, feeds), repeat)

    def eager() -> None:
        with torch.no_grad():
            net(x)

    t_torch = timed(eager, repeat)
    print(f"resnet18 batch 8 {size}x{size} f32 on {device} (max |ours - onnxruntime| = {error:.1e}):")
    print(f"  burn-import {t_ours * 1e3:9.1f} ms")
    print(f"  onnxruntime {t_ort * 1e3:9.1f} ms   ours/onnxruntime = {t_ours / t_ort:.2f}x")
    print(f"  torch eager {t_torch * 1e3:9.1f} ms   ours/torch       = {t_ours / t_torch:.2f}x")


def resnet50_sized_state(generator: torch.Generator) -> dict[str, Any]:
    """A state dict of ResNet-50's size (about 25.6M f32 parameters in 320 tensors, 102 MB)."""
    state: dict[str, Any] = {}
    widths = [(64, 3), (128, 4), (256, 6), (512, 3)]
    inp = 64
    state["conv1.weight"] = torch.randn(64, 3, 7, 7, generator=generator)
    for stage, (width, blocks) in enumerate(widths):
        for block in range(blocks):
            prefix = f"layer{stage + 1}.{block}"
            for i, (o, c, k) in enumerate([(width, inp, 1), (width, width, 3), (4 * width, width, 1)]):
                state[f"{prefix}.conv{i + 1}.weight"] = torch.randn(o, c, k, k, generator=generator)
                for name in ("weight", "bias", "running_mean", "running_var"):
                    state[f"{prefix}.bn{i + 1}.{name}"] = torch.randn(o, generator=generator)
            if block == 0:
                state[f"{prefix}.downsample.0.weight"] = torch.randn(
                    4 * width, inp, 1, 1, generator=generator
                )
            inp = 4 * width
    state["fc.weight"] = torch.randn(1000, 2048, generator=generator)
    state["fc.bias"] = torch.randn(1000, generator=generator)
    return state


def bench_weights(folder: Path, repeat: int) -> None:
    from safetensors.numpy import load_file as st_load_file
    from safetensors.torch import save_file as st_save_file

    from burn_import.pytorch import read_pytorch
    from burn_import.safetensors import read_safetensors

    state = resnet50_sized_state(torch.Generator().manual_seed(0))
    count = sum(t.numel() for t in state.values())
    pt = folder / "resnet50.pt"
    torch.save(state, pt)
    st = folder / "resnet50.safetensors"
    st_save_file(state, str(st))

    def ours_pt() -> None:
        for value in read_pytorch(pt).values():
            np.array(value.numpy())  # read into memory, as torch.load does

    def ours_pt_lazy() -> None:
        for value in read_pytorch(pt).values():
            value.numpy()

    runs = max(repeat, 15)
    pt_times = interleaved(
        {"ours": ours_pt, "lazy": ours_pt_lazy, "torch": lambda: torch.load(pt, weights_only=True)}, runs
    )
    (t_ours, c_ours), (t_lazy, c_lazy), (t_torch, c_torch) = pt_times.values()
    print(
        f"resnet50-sized .pt ({count / 1e6:.1f}M parameters, {pt.stat().st_size / 1e6:.0f} MB), "
        f"medians of {runs} interleaved runs, wall (cpu):"
    )
    print(
        f"  read_pytorch (in memory)     {t_ours * 1e3:8.1f} ms ({c_ours * 1e3:6.1f})   "
        f"ours/torch.load = {t_ours / t_torch:.2f}x ({c_ours / c_torch:.2f}x)"
    )
    print(
        f"  read_pytorch (mapped)        {t_lazy * 1e3:8.1f} ms ({c_lazy * 1e3:6.1f})   "
        f"ours/torch.load = {t_lazy / t_torch:.2f}x ({c_lazy / c_torch:.2f}x)"
    )
    print(f"  torch.load(weights_only)     {t_torch * 1e3:8.1f} ms ({c_torch * 1e3:6.1f})")

    st_times = interleaved(
        {
            # the file's data read whole into one buffer, tensors as views of it
            "ours": lambda: read_safetensors(st, mmap=False),
            "mapped": lambda: read_safetensors(st),
            "reference": lambda: st_load_file(str(st)),
        },
        runs,
    )
    (t_st, c_st), (t_map, c_map), (t_ref, c_ref) = st_times.values()
    print(f"resnet50-sized safetensors, medians of {runs} interleaved runs, wall (cpu):")
    print(
        f"  read_safetensors (in memory) {t_st * 1e3:8.1f} ms ({c_st * 1e3:6.1f})   "
        f"ours/safetensors.numpy = {t_st / t_ref:.2f}x ({c_st / c_ref:.2f}x)"
    )
    print(
        f"  read_safetensors (mapped)    {t_map * 1e3:8.1f} ms ({c_map * 1e3:6.1f})   "
        f"ours/safetensors.numpy = {t_map / t_ref:.2f}x ({c_map / c_ref:.2f}x)"
    )
    print(f"  safetensors.numpy.load_file  {t_ref * 1e3:8.1f} ms ({c_ref * 1e3:6.1f})")


class Bottleneck(torch.nn.Module):
    def __init__(self, inp: int, width: int, stride: int) -> None:
        super().__init__()
        out = 4 * width
        self.conv1 = torch.nn.Conv2d(inp, width, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(width)
        self.conv2 = torch.nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(width)
        self.conv3 = torch.nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = torch.nn.BatchNorm2d(out)
        self.down = None
        if stride != 1 or inp != out:
            self.down = torch.nn.Sequential(
                torch.nn.Conv2d(inp, out, 1, stride, bias=False), torch.nn.BatchNorm2d(out)
            )

    def forward(self, x: Any) -> Any:
        skip = x if self.down is None else self.down(x)
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)))
        return torch.relu(skip + self.bn3(self.conv3(y)))


class ResNet50(torch.nn.Module):
    """ResNet-50's architecture (bottleneck blocks 3/4/6/3, 25.6M parameters), written out here."""

    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.stem = torch.nn.Sequential(
            torch.nn.Conv2d(3, 64, 7, 2, 3, bias=False),
            torch.nn.BatchNorm2d(64),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(3, 2, 1),
        )
        layers: list[torch.nn.Module] = []
        inp = 64
        for width, blocks, stride in [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]:
            for block in range(blocks):
                layers.append(Bottleneck(inp, width, stride if block == 0 else 1))
                inp = 4 * width
        self.layers = torch.nn.Sequential(*layers)
        self.fc = torch.nn.Linear(inp, classes)

    def forward(self, x: Any) -> Any:
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))


class EncoderLayer(torch.nn.Module):
    """A post-norm BERT layer from plain Linear, LayerNorm, matmul and softmax (so the export has
    standard ONNX ops, no fused attention)."""

    def __init__(self, d: int, heads: int, ff: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.norm1 = torch.nn.LayerNorm(d)
        self.up = torch.nn.Linear(d, ff)
        self.down = torch.nn.Linear(ff, d)
        self.norm2 = torch.nn.LayerNorm(d)

    def forward(self, x: Any, bias: Any) -> Any:
        b, t, d = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = torch.matmul(q, k.transpose(-1, -2)) / (d // self.heads) ** 0.5 + bias
        mixed = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, t, d)
        x = self.norm1(x + self.proj(mixed))
        return self.norm2(x + self.down(torch.nn.functional.gelu(self.up(x))))


class Encoder(torch.nn.Module):
    """A BERT-base-sized encoder (12 layers, d 768, 12 heads, feed-forward 3072, 85M parameters) over
    embedded tokens, with a 0/1 attention mask over keys."""

    def __init__(self, layers: int = 12, d: int = 768, heads: int = 12, ff: int = 3072) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(EncoderLayer(d, heads, ff) for _ in range(layers))

    def forward(self, x: Any, mask: Any) -> Any:
        bias = (1.0 - mask)[:, None, None, :] * -10000.0
        for layer in self.layers:
            x = layer(x, bias)
        return x


def bench_onnx_large(folder: Path, repeat: int, size: int) -> None:
    """ResNet-50 and a BERT-base-sized encoder through ``burn_import.onnx.load`` vs onnxruntime, both on
    the same number of threads, medians of interleaved runs."""
    torch.manual_seed(0)
    mask = torch.ones(8, 128)
    mask[1::2, 96:] = 0.0  # every other sequence padded after 96 tokens
    cases: list[tuple[str, str, Callable[[], torch.nn.Module], dict[str, Any]]] = [
        ("resnet50", f"batch 8 {size}x{size}", ResNet50, {"x": torch.randn(8, 3, size, size)}),
        ("bert-base encoder", "batch 8 x 128", Encoder, {"x": torch.randn(8, 128, 768), "mask": mask}),
    ]
    for name, shape, build, inputs in cases:
        path = folder / f"{name.split()[0]}.onnx"
        net = build().eval()
        for module in net.modules():  # BatchNorm statistics of a trained model, not the identity
            if isinstance(module, torch.nn.BatchNorm2d):
                assert module.running_var is not None
                assert module.running_mean is not None
                torch.nn.init.uniform_(module.running_var, 0.5, 1.5)
                torch.nn.init.normal_(module.running_mean, 0.0, 0.1)
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                net,
                tuple(inputs.values()),
                str(path),
                dynamo=False,
                input_names=list(inputs),
                opset_version=17,
            )
        del net
        compare_onnx(f"{name} {shape}", path, {key: value.numpy() for key, value in inputs.items()}, repeat)


def compare_onnx(title: str, path: Path, feeds: dict[str, Any], repeat: int) -> None:
    """Check ``path`` run by ``burn_import.onnx.load`` equals onnxruntime within f32 tolerance, then
    print both times (onnxruntime on our thread count)."""
    import onnxruntime as ort

    import burn_import.onnx as burn_onnx

    device = default_device()
    threads = _our_threads(device)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    model = burn_onnx.load(path, device)
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    ours_inputs = [Tensor.from_numpy(value, device) for value in feeds.values()]
    ours = model(*ours_inputs).to_numpy()
    reference = session.run(None, feeds)[0]
    scale = float(np.abs(reference).max())
    error = float(np.abs(ours - reference).max())
    if not error <= 1e-4 * max(scale, 1.0):
        raise SystemExit(
            f"{title}: ours differs from onnxruntime by {error:.2e} (largest |value| {scale:.2e})"
        )
    times = interleaved(
        {"ours": lambda: model(*ours_inputs).to_numpy(), "onnxruntime": lambda: session.run(None, feeds)},
        repeat,
        warmup=1,
    )
    (t_ours, c_ours), (t_ort, c_ort) = times.values()
    print(
        f"{title} f32 on {device}, {threads} threads each, medians of {repeat} interleaved runs, "
        f"wall (cpu) (max |ours - onnxruntime| = {error:.1e} of {scale:.1e}):"
    )
    print(
        f"  burn-import {t_ours * 1e3:9.1f} ms ({c_ours * 1e3:8.1f})   "
        f"ours/onnxruntime = {t_ours / t_ort:.2f}x"
    )
    print(f"  onnxruntime {t_ort * 1e3:9.1f} ms ({c_ort * 1e3:8.1f})")


def _our_threads(device: Any) -> int:
    """The threads our backend computes with (NdArray's policy; torch's count for other backends)."""
    if not str(device).startswith("ndarray"):
        return torch.get_num_threads()
    from burn_ndarray._threads import num_threads  # the policy has no public getter

    return num_threads()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--size", type=int, default=224, help="the CNN's input height and width")
    parser.add_argument(
        "--only", choices=["weights", "cnn", "onnx-large"], default=None, help="run one part only"
    )
    args = parser.parse_args()
    torch.set_num_threads(max(torch.get_num_threads(), 1))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if args.only in (None, "weights"):
            bench_weights(folder, args.repeat)
        if args.only in (None, "cnn"):
            bench_cnn(folder, args.repeat, args.size)
        if args.only in (None, "onnx-large"):
            bench_onnx_large(folder, args.repeat, args.size)


if __name__ == "__main__":
    main()
