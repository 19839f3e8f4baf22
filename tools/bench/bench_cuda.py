"""The Cuda backend (CuPy) against PyTorch CUDA eager on one GPU, side by side in one run: add of two
64M-float tensors, matmul 4096² f32, conv2d forward + backward (and, for the large problem, each of its
three kernels alone; through cuDNN where its frontend is installed, then again on burn-cuda's own
kernels), scaled dot-product attention forward + backward [16, 8, 1024, 64] causal in f32 and bf16
against ``torch.nn.functional.scaled_dot_product_attention``, the host cost of a tiny op (on ``Cuda()``
and through ``Fusion(Cuda())``), and one training step of the guide model (batch 64, Adam) on
``Autodiff(Cuda())``; with burn-fusion, the Book's
custom GELU on 64M f32 and the guide step through ``Fusion(Cuda())``, against PyTorch eager and against
``torch.compile`` (default mode).

Every timed call ends by waiting for its GPU work (``device.sync()`` for ours,
``torch.cuda.synchronize()`` for PyTorch), so the times are of finished work, not of queued launches.
Both sides compute in full f32: TF32 is off in PyTorch's matmul and cuDNN, as it is in ours. The ratio
column is our time over PyTorch's; the targets are the issue's (a bandwidth or throughput of at least
0.9x or 0.95x PyTorch's is a time ratio of at most 1.11 or 1.05).

Without a GPU, CuPy or PyTorch CUDA it prints why and exits 0.

Run: ``python tools/bench/bench_cuda.py [--quick]``; the attention rows alone:
``python -c "import sys; sys.path.insert(0, 'tools/bench'); import bench_cuda; bench_cuda.attention_main()"``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _harness import Row, arguments, compare, gpu_unavailable, print_table

from burn_backend import AttentionOptions, Backend, ConvOptions, Device, DType, Tensor, module

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "guide"))

TINY_OPS = 100  # tiny adds per timed call: the host cost is the call's time over this
PIPELINED = 20  # calls queued before one wait, for the bandwidth rows


def _synced(function: Callable[[], object], sync: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        function()
        sync()

    return run


def _per_op(row: Row, count: int) -> Row:
    return Row(row.name, row.ours / count, row.reference / count, row.reference_name, row.target)


def _elementwise_rows(device: Device, torch: Any, repeat: int) -> list[Row]:
    sync, tsync = device.sync, torch.cuda.synchronize
    n = 64 * 1024 * 1024
    a = Tensor.random([n], device=device)
    b = Tensor.random([n], device=device)
    ta = torch.rand(n, device="cuda")
    tb = torch.rand(n, device="cuda")
    add = compare(
        "add 64M f32 (3 x 256 MiB moved)",
        _synced(lambda: a + b, sync),
        _synced(lambda: ta + tb, tsync),
        "torch",
        "<= 1.11x (>= 0.9x bandwidth)",
        repeat,
        20,
    )

    m = 4096
    x = Tensor.random([m, m], device=device)
    y = Tensor.random([m, m], device=device)
    tx = torch.rand(m, m, device="cuda")
    ty = torch.rand(m, m, device="cuda")
    matmul = compare(
        "matmul 4096x4096 f32",
        _synced(lambda: x @ y, sync),
        _synced(lambda: tx @ ty, tsync),
        "torch",
        "<= 1.05x (>= 0.95x throughput)",
        repeat,
        10,
    )

    s = Tensor.ones([2, 2], device=device)
    ts = torch.ones(2, 2, device="cuda")

    def ours_tiny() -> None:
        for _ in range(TINY_OPS):
            s + s
        sync()

    def torch_tiny() -> None:
        for _ in range(TINY_OPS):
            ts + ts
        tsync()

    tiny = compare(
        f"host cost of a 2x2 add (/{TINY_OPS} ops)", ours_tiny, torch_tiny, "torch", "<= 2x", repeat, 20
    )
    return [add, matmul, _per_op(tiny, TINY_OPS)]


def _conv_row(
    shape: tuple[int, int, int, int], out_channels: int, repeat: int, torch: Any, inner: Backend, label: str
) -> Row:
    from burn_autodiff import Autodiff

    device = Autodiff(inner).device(0)
    batch, channels, height, width = shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((out_channels, channels, 3, 3)) / np.sqrt(channels * 9)).astype(np.float32)
    b = rng.standard_normal(out_channels).astype(np.float32)
    g = rng.standard_normal((batch, out_channels, height - 2, width - 2)).astype(np.float32)
    ours = [Tensor.from_numpy(a, device).require_grad() for a in (x, w, b)]
    og = Tensor.from_numpy(g, device)
    options = ConvOptions((1, 1), (0, 0), (1, 1), 1)
    theirs = [torch.tensor(a, device="cuda", requires_grad=True) for a in (x, w, b)]
    tg = torch.tensor(g, device="cuda")
    np.testing.assert_allclose(
        module.conv2d(*ours, options).to_numpy(),
        torch.nn.functional.conv2d(*theirs).detach().cpu().numpy(),
        rtol=1e-3,
        atol=1e-3,
    )

    def ours_step() -> None:
        tx, tw, tb = ours
        grads = (module.conv2d(tx, tw, tb, options) * og).sum().backward()
        for tensor in ours:
            tensor.grad(grads)
        device.sync()

    def torch_step() -> None:
        rx, rw, rb = theirs
        loss = (torch.nn.functional.conv2d(rx, rw, rb) * tg).sum()
        torch.autograd.grad(loss, theirs)
        torch.cuda.synchronize()

    name = f"conv2d fwd+bwd {batch}x{channels}->{out_channels}x{height}x{width} 3x3{label}"
    return compare(name, ours_step, torch_step, "torch", "<= 2x", repeat, 10)


def _conv_op_rows(
    shape: tuple[int, int, int, int], out_channels: int, repeat: int, torch: Any, backend: Any, label: str
) -> list[Row]:
    """The three kernels of a convolution one by one (backend ops on primitives, no autodiff): the
    forward, the input gradient and the weight gradient, against cuDNN through PyTorch."""
    device = backend.device(0)
    batch, channels, height, width = shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((out_channels, channels, 3, 3)) / np.sqrt(channels * 9)).astype(np.float32)
    g = rng.standard_normal((batch, out_channels, height - 2, width - 2)).astype(np.float32)
    px, pw, pg = (Tensor.from_numpy(a, device).primitive for a in (x, w, g))
    tx, tw, tg = (torch.tensor(a, device="cuda") for a in (x, w, g))
    options = ConvOptions((1, 1), (0, 0), (1, 1), 1)
    grad = torch.nn.grad
    pairs = {
        "forward": (
            lambda: backend.conv2d(px, pw, None, options),
            lambda: torch.nn.functional.conv2d(tx, tw),
        ),
        "input gradient": (
            lambda: backend.conv2d_x_backward(px, pw, pg, options),
            lambda: grad.conv2d_input(tx.shape, tw, tg),
        ),
        "weight gradient": (
            lambda: backend.conv2d_weight_backward(px, pw, pg, options),
            lambda: grad.conv2d_weight(tx, tw.shape, tg),
        ),
    }
    sync, tsync = device.sync, torch.cuda.synchronize
    size = f"{batch}x{channels}->{out_channels}x{height}x{width} 3x3"
    return [
        compare(
            f"conv2d {part} {size}{label}",
            _synced(ours, sync),
            _synced(theirs, tsync),
            "torch",
            "<= 1.1x" if label == "" else "-",
            repeat,
            10,
        )
        for part, (ours, theirs) in pairs.items()
    ]


def _conv_rows(repeat: int, torch: Any) -> list[Row]:
    """The convolution rows on ``Cuda()`` (through cuDNN where its frontend is installed) and, where it
    is, again on ``Cuda(cudnn=False)`` (burn-cuda's im2col kernels, labelled "own")."""
    from burn_cuda import Cuda
    from burn_cuda._cudnn import unavailable_reason

    reason = unavailable_reason()
    print(f"cuDNN for our convolutions: {'used' if reason is None else 'not used: ' + reason}")
    variants = [(Cuda(), "")] + ([(Cuda(cudnn=False), ", own")] if reason is None else [])
    rows = []
    for backend, label in variants:
        rows.append(_conv_row((64, 8, 26, 26), 16, repeat, torch, backend, label))
        rows.append(_conv_row((32, 64, 56, 56), 128, repeat, torch, backend, label))
        rows.extend(_conv_op_rows((32, 64, 56, 56), 128, repeat, torch, backend, label))
    return rows


def _attention_rows(repeat: int, torch: Any, dtype_name: str) -> list[Row]:
    """Attention on primitives (``attention`` then ``attention_backward``, no autodiff) against PyTorch's
    SDPA (its memory-efficient kernel in f32, flash attention in bf16) with autograd, both causal."""
    from burn_cuda import Cuda
    from burn_cuda._cupy import cp

    backend = Cuda()
    device = backend.device(0)
    shape = (16, 8, 1024, 64)
    dtype = DType.F32 if dtype_name == "f32" else DType.BF16
    tdtype = torch.float32 if dtype_name == "f32" else torch.bfloat16
    rng = np.random.default_rng(0)
    host = [rng.standard_normal(shape).astype(np.float32) for _ in range(4)]
    q, k, v, g = (cp.asarray(a.astype(dtype.numpy)) for a in host)
    tq, tk, tv = (torch.tensor(a, device="cuda", dtype=tdtype, requires_grad=True) for a in host[:3])
    tg = torch.tensor(host[3], device="cuda", dtype=tdtype)
    options = AttentionOptions(is_causal=True)
    sdpa = torch.nn.functional.scaled_dot_product_attention
    ours_out = cp.asnumpy(backend.runtime.widen(backend.attention(q, k, v, None, None, options)))
    theirs_out = sdpa(tq, tk, tv, is_causal=True).float().detach().cpu().numpy()
    tolerance = 1e-4 if dtype_name == "f32" else 3e-2
    np.testing.assert_allclose(ours_out, theirs_out, rtol=tolerance, atol=tolerance)

    def ours_forward() -> None:
        backend.attention(q, k, v, None, None, options)
        device.sync()

    def ours_step() -> None:
        out = backend.attention(q, k, v, None, None, options)
        backend.attention_backward(q, k, v, None, None, options, out, g)
        device.sync()

    def theirs_forward() -> None:
        with torch.no_grad():
            sdpa(tq, tk, tv, is_causal=True)
        torch.cuda.synchronize()

    def theirs_step() -> None:
        torch.autograd.grad(sdpa(tq, tk, tv, is_causal=True), (tq, tk, tv), tg)
        torch.cuda.synchronize()

    size = "x".join(str(n) for n in shape)
    target = "<= 1.2x" if dtype_name == "f32" else "-"
    return [
        compare(
            f"attention fwd {size} {dtype_name} causal", ours_forward, theirs_forward, "torch", "-", repeat, 5
        ),
        compare(
            f"attention fwd+bwd {size} {dtype_name} causal",
            ours_step,
            theirs_step,
            "torch",
            target,
            repeat,
            5,
        ),
    ]


def attention_main() -> None:
    """The attention rows alone (f32 and bf16), TF32 off on both sides."""
    args = arguments(__doc__ or "")
    reason = gpu_unavailable()
    if reason is not None:
        print(f"bench_cuda: skipped: {reason}")
        return
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    repeat = 3 if args.quick else 7
    rows = _attention_rows(repeat, torch, "f32") + _attention_rows(repeat, torch, "bf16")
    print_table("Cuda attention vs PyTorch SDPA (ratio = our time / PyTorch time)", rows)


def _guide_rows(repeat: int, torch: Any, inner: Backend, compiled: bool = False) -> list[Row]:
    """One training step of the guide model on ``Autodiff(inner)`` against PyTorch eager; with
    ``compiled``, also against the same PyTorch model through ``torch.compile`` (its default mode; the
    optimizer stays eager, as the PyTorch tutorials compile a model), compiled before the timing."""
    from bench_guide import BATCH, LR, TorchModel
    from model import ModelConfig

    from burn_autodiff import Autodiff
    from burn_nn import loss
    from burn_nn.optim import AdamConfig, GradientsParams

    rng = np.random.default_rng(0)
    images = rng.random((BATCH, 28, 28), dtype=np.float32)
    labels = rng.integers(0, 10, BATCH)
    device = Autodiff(inner).device(0)
    device.seed(0)
    state = {"model": ModelConfig(10, 512).init(device)}
    optim = AdamConfig().init()
    criterion = loss.CrossEntropyLossConfig().init(device)
    x, y = Tensor.from_data(images, device), Tensor.from_data(labels, device)

    def forward_backward(model: Any, images: Tensor, targets: Tensor) -> Any:
        return GradientsParams.from_grads(criterion(model(images), targets).backward(), model)

    def ours() -> None:
        model = state["model"]
        state["model"] = optim.step(LR, model, forward_backward(model, x, y))
        device.sync()

    torch.manual_seed(0)
    torch_model = TorchModel().cuda()
    torch_optim = torch.optim.Adam(torch_model.parameters(), lr=LR)
    tx = torch.from_numpy(images).cuda()
    ty = torch.from_numpy(labels).cuda()

    def theirs() -> None:
        torch_optim.zero_grad()
        torch.nn.functional.cross_entropy(torch_model(tx), ty).backward()
        torch_optim.step()
        torch.cuda.synchronize()

    name = f"guide training step, batch 64 (Adam), {device.backend.stack_name}"
    target = "<= 3x" if inner.name == "cuda" else "<= 1x (issue 17)"
    rows = [compare(name, ours, theirs, "torch", target, repeat, 10)]
    if compiled:
        from burn_fusion import replay

        # the whole step in one recording: the optimizer keeps its step count on the device
        replay_optim = AdamConfig(capturable=True).init()

        @replay
        def train_step(model: Any, optim: Any, images: Tensor, targets: Tensor) -> Any:
            return optim.step(LR, model, forward_backward(model, images, targets))

        replay_state = {"model": ModelConfig(10, 512).init(device)}

        def ours_replayed() -> None:
            replay_state["model"] = train_step(replay_state["model"], replay_optim, x, y)
            device.sync()

        for _ in range(4):  # a first call (no optimizer state yet), two eager calls, then the capture
            ours_replayed()
        assert train_step.stats["captured"] == 1, train_step.stats
        rows.append(
            compare(
                name + ", whole step replayed",
                ours_replayed,
                theirs,
                "torch",
                "<= 0.5x (issue 17)",
                repeat,
                10,
            )
        )
        torch.manual_seed(0)
        compiled_model = torch.compile(TorchModel().cuda())
        compiled_optim = torch.optim.Adam(compiled_model.parameters(), lr=LR)

        def theirs_compiled() -> None:
            compiled_optim.zero_grad()
            torch.nn.functional.cross_entropy(compiled_model(tx), ty).backward()
            compiled_optim.step()
            torch.cuda.synchronize()

        for _ in range(3):  # compiles the forward and backward graphs
            theirs_compiled()
        rows.append(compare(name, ours, theirs_compiled, "torch.compile", "-", repeat, 10))
    return rows


def _fusion_tiny_row(repeat: int, torch: Any, fusion: Backend) -> Row:
    """The host cost of a tiny op through ``Fusion(Cuda())``: ``TINY_OPS`` adds of 2x2 tensors whose
    results are all kept (so every one is computed), then one wait; PyTorch eager does the same."""
    device = fusion.device(0)
    s = Tensor.ones([2, 2], device=device)
    ts = torch.ones(2, 2, device="cuda")

    def ours() -> None:
        kept = [s + s for _ in range(TINY_OPS)]
        device.sync()
        del kept

    def theirs() -> None:
        kept = [ts + ts for _ in range(TINY_OPS)]
        torch.cuda.synchronize()
        del kept

    row = compare(
        f"host cost of a 2x2 add, Fusion(Cuda()) (/{TINY_OPS} kept)", ours, theirs, "torch",
        "<= 1.0x (issue 17)", repeat, 20,
    )  # fmt: skip
    return _per_op(row, TINY_OPS)


def _gelu_rows(repeat: int, torch: Any, fusion: Backend) -> list[Row]:
    """The Burn Book's custom GELU on 64M f32 through ``Fusion(Cuda())``: against PyTorch's own
    ``gelu`` and against a copy of the same bytes (the bandwidth floor).

    Two ways of timing: a call that waits for its result (the host's recording, the launch and the
    kernel, one after the other), and the bandwidth row, where ``PIPELINED`` calls are queued before
    one wait (the host prepares the next kernel while the GPU runs this one, as in a training loop),
    which is the kernel's throughput whenever the host keeps ahead."""
    device = fusion.device(0)
    n = 64 * 1024 * 1024
    x = Tensor.random([n], device=device)
    tx = torch.rand(n, device="cuda")
    sqrt2 = 2.0**0.5

    def gelu() -> Tensor:
        return x * 0.5 * ((x / sqrt2).erf() + 1.0)

    def ours() -> None:
        y = gelu()
        device.sync()  # while y is alive: Fusion never computes a result nothing references
        del y

    def ours_pipelined() -> None:
        for _ in range(PIPELINED):
            y = gelu()
            fusion.flush(device)  # launched, not waited for
        device.sync()
        del y

    def torch_pipelined(function: Callable[[], object]) -> Callable[[], None]:
        def run() -> None:
            for _ in range(PIPELINED):
                function()
            torch.cuda.synchronize()

        return run

    latency = compare(
        "custom GELU 64M f32, Fusion(Cuda()), one call", ours,
        _synced(lambda: torch.nn.functional.gelu(tx), torch.cuda.synchronize), "torch gelu", "-", repeat, 20,
    )  # fmt: skip
    gelu_row = _per_op(compare(
        "custom GELU 64M f32, Fusion(Cuda()), queued", ours_pipelined,
        torch_pipelined(lambda: torch.nn.functional.gelu(tx)), "torch gelu", "-", repeat, 5,
    ), PIPELINED)  # fmt: skip
    copy = _per_op(compare(
        "custom GELU 64M f32 queued vs a copy of 64M f32", ours_pipelined,
        torch_pipelined(lambda: tx.clone()), "torch clone", "<= 1.11x (>= 0.9x bandwidth)", repeat, 5,
    ), PIPELINED)  # fmt: skip
    print(
        f"custom GELU through Fusion(Cuda()): {2 * 4 * n / gelu_row.ours / 1e9:.0f} GB/s queued, "
        f"{2 * 4 * n / latency.ours / 1e9:.0f} GB/s one call at a time; "
        f"a copy: {2 * 4 * n / copy.reference / 1e9:.0f} GB/s queued"
    )
    return [latency, gelu_row, copy]


def main() -> None:
    args = arguments(__doc__ or "")
    reason = gpu_unavailable()
    if reason is not None:
        print(f"bench_cuda: skipped: {reason}")
        return
    import torch

    from burn_cuda import Cuda

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    repeat = 3 if args.quick else 7
    device = Cuda().device(0)
    print(f"GPU: {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    rows = _elementwise_rows(device, torch, repeat)
    rows.extend(_conv_rows(repeat, torch))
    rows.extend(_attention_rows(repeat, torch, "f32"))
    rows.extend(_attention_rows(repeat, torch, "bf16"))
    rows.extend(_guide_rows(repeat, torch, Cuda()))
    try:
        from burn_fusion import Fusion
    except ImportError:
        print("burn-fusion is not installed: no fusion rows")
    else:
        rows.append(_fusion_tiny_row(repeat, torch, Fusion(Cuda())))
        rows.extend(_gelu_rows(repeat, torch, Fusion(Cuda())))
        rows.extend(_guide_rows(repeat, torch, Fusion(Cuda()), compiled=True))
    print_table("Cuda (CuPy) vs PyTorch CUDA eager, f32 (ratio = our time / PyTorch time)", rows)


if __name__ == "__main__":
    main()
