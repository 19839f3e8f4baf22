"""Cuda-specific behaviour: no GPU (import, no devices, a clear error), devices, asynchrony, memory,
cuBLAS precision. The GPU tests skip, with the reason, where CuPy or a GPU is missing."""

from __future__ import annotations

import gc
import math
from typing import Any

import numpy as np
import pytest

from burn_backend import ConvOptions, Distribution, DType, Tensor, module
from burn_cuda import Cuda, from_dlpack, memory_stats
from burn_cuda._cupy import unavailable_reason

REASON = unavailable_reason()
needs_gpu = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")


def test_backends_are_values() -> None:
    assert Cuda() == Cuda()
    assert hash(Cuda()) == hash(Cuda())
    assert Cuda(float_dtype="f64") != Cuda()
    assert Cuda(int_dtype="i32").int_dtype is DType.I32
    assert Cuda.name == "cuda"
    assert not Cuda.is_cpu


@pytest.mark.parametrize(
    ("setting", "value"), [("float_dtype", "i32"), ("int_dtype", "f32"), ("int_dtype", "bool")]
)
def test_settings_of_the_wrong_kind_are_rejected(setting: str, value: str) -> None:
    with pytest.raises(ValueError, match=setting):
        Cuda(**{setting: value})


def test_without_a_gpu_there_is_no_device_and_the_error_says_why() -> None:
    if REASON is None:
        pytest.skip("this machine has a GPU")
    backend = Cuda()
    assert backend.device_count() == 0
    with pytest.raises(ValueError, match=r"no device 0.*(CuPy|GPU)"):
        backend.device(0)


# -- on a GPU -------------------------------------------------------------------------------------------
@pytest.mark.gpu
@needs_gpu
def test_one_device_per_gpu() -> None:
    import cupy

    backend = Cuda()
    count = cupy.cuda.runtime.getDeviceCount()
    assert backend.device_count() == count
    for index in range(count):
        device = backend.device(index)
        tensor = Tensor.ones([2, 3], device)
        assert tensor.primitive.device.id == index
        assert tensor.device == device
    with pytest.raises(ValueError, match="no device"):
        backend.device(count)


@pytest.mark.gpu
@needs_gpu
def test_to_device_between_gpus() -> None:
    backend = Cuda()
    if backend.device_count() < 2:
        pytest.skip("needs two GPUs")
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    moved = Tensor.from_numpy(array, backend.device(0)).swap_dims(0, 1).to_device(backend.device(1))
    assert moved.primitive.device.id == 1
    np.testing.assert_array_equal(moved.to_numpy(), array.T)
    total = (moved * 2.0).sum().into_scalar()
    assert total == 2.0 * array.sum()


@pytest.mark.gpu
@needs_gpu
def test_a_training_step_on_the_second_gpu_matches_the_first() -> None:
    """Kernels, cuBLAS handles and caches are per device: a convolution's forward and gradients and a
    matmul computed on GPU 1 live there and equal GPU 0's."""
    autodiff = pytest.importorskip("burn_autodiff")
    backend = autodiff.Autodiff(Cuda())
    if backend.device_count() < 2:
        pytest.skip("needs two GPUs")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 9, 9)).astype(np.float32)
    w = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    m = rng.standard_normal((5 * 7 * 7, 6)).astype(np.float32)
    results = []
    for index in (0, 1):
        device = backend.device(index)
        tx, tw, tm = (Tensor.from_numpy(a, device).require_grad() for a in (x, w, m))
        y = module.conv2d(tx, tw, None, ConvOptions((1, 1), (0, 0), (1, 1), 1)).reshape([4, -1]).matmul(tm)
        grads = y.square().sum().backward()
        values = [y.inner(), *(t.grad(grads) for t in (tx, tw, tm))]
        assert all(v is not None and v.primitive.device.id == index for v in values)
        results.append([v.to_numpy() for v in values if v is not None])
    for on_0, on_1 in zip(*results):
        np.testing.assert_array_equal(on_1, on_0)


@pytest.mark.gpu
@needs_gpu
def test_a_seed_repeats_the_device_stream_and_leaves_other_devices_alone() -> None:
    backend = Cuda()
    device = backend.device(0)

    def draw(on: Any) -> np.ndarray:
        return Tensor.random([128], Distribution.normal(0.0, 1.0), on).to_numpy().copy()

    device.seed(7)
    first = draw(device)
    device.seed(7)
    np.testing.assert_array_equal(draw(device), first)
    assert abs(float(first.mean())) < 0.5
    if backend.device_count() > 1:
        other = backend.device(1)
        other.seed(7)
        device.seed(7)
        np.testing.assert_array_equal(draw(other), first)  # seeding device 0 did not move device 1's stream


@pytest.mark.gpu
@needs_gpu
def test_matmul_is_f32_not_tf32_by_default() -> None:
    device = Cuda().device(0)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 512))
    b = rng.standard_normal((512, 512))
    product = Tensor.from_numpy(a.astype(np.float32), device).matmul(
        Tensor.from_numpy(b.astype(np.float32), device)
    )
    reference = a.astype(np.float32).astype(np.float64) @ b.astype(np.float32).astype(np.float64)
    error = np.linalg.norm(product.to_numpy() - reference) / np.linalg.norm(reference)
    assert error < 1e-5  # TF32 (10-bit mantissas) lands near 3e-4


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("dtype", [DType.F32, DType.F64, DType.F16], ids=str)
def test_erf_against_math_erf(dtype: DType) -> None:
    device = Cuda().device(0)
    values = np.linspace(-6.0, 6.0, 241)
    result = Tensor.from_numpy(values.astype(dtype.numpy), device).erf().to_numpy().astype(np.float64)
    expected = np.array([math.erf(v) for v in values.astype(dtype.numpy).astype(np.float64)])
    tolerance = {DType.F64: 1e-14, DType.F32: 1e-6, DType.F16: 1e-3}[dtype]
    np.testing.assert_allclose(result, expected, rtol=tolerance, atol=tolerance)


_SPIN = r"""
extern "C" __global__ void burn_cuda_test_spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
}
"""


def _busy(cupy: Any, seconds: float) -> Any:
    """Keep the GPU busy for about ``seconds`` (a one-thread spin kernel); return an event recorded
    behind it, which completes only once the spin is over."""
    spin = cupy.RawKernel(_SPIN, "burn_cuda_test_spin")
    rate = cupy.cuda.runtime.deviceGetAttribute(cupy.cuda.runtime.cudaDevAttrClockRate, 0)  # kHz
    spin((1,), (1,), (np.int64(seconds * rate * 1000),))
    event = cupy.cuda.Event()
    event.record()
    return event


@pytest.mark.gpu
@needs_gpu
def test_a_chain_of_1000_ops_issues_no_synchronization() -> None:
    """Each 100 ops of the chain are queued behind a kernel that keeps the GPU busy for half a second:
    had any op waited for the device, the kernel's completion event would have fired before the ops
    returned. (In chunks: the driver queues about a thousand launches, then the host waits for room,
    which is back-pressure, not a synchronization; 100 ops launch a few hundred kernels.)"""
    import cupy

    device = Cuda().device(0)
    w = Tensor.random([64, 64], Distribution.normal(0.0, 0.1), device)
    indices = Tensor.random([64, 64], None, device).argmax(1)
    pairs = Tensor.cat([indices.reshape([64, 1]), indices.flip([0]).reshape([64, 1])], 1)
    steps = [
        lambda t: t * 0.5 + 0.25,
        lambda t: t.matmul(w),
        lambda t: t.exp().log1p(),
        lambda t: t - t.mean_dim(1),
        lambda t: t.mask_where(t.greater_elem(0.0), t * 0.1),
        lambda t: Tensor.cat([t.slice([slice(0, 32)]), t.slice([slice(32, 64)])], 0),
        lambda t: t + t.gather(1, indices),
        lambda t: t.swap_dims(0, 1).reshape([64, 64]).clamp(-4.0, 4.0),
        lambda t: t + t.gather_nd(pairs).reshape([64, 1]),  # index checks would read the indices back
        lambda t: t * (indices.reshape([64]).one_hot(64).float() + 1.0),
    ]
    x = Tensor.random([64, 64], None, device)
    for step in steps:  # compile and load every kernel first: loading a module may wait
        step(x)
    device.sync()
    waited = []
    for chunk in range(10):
        busy = _busy(cupy, 0.5)
        for i in range(100):
            x = steps[(chunk * 100 + i) % len(steps)](x)
        if busy.done:
            waited.append(chunk)
        device.sync()
        assert busy.done
    assert not waited, f"an op waited for the device in the chunks {waited}"
    assert np.isfinite(x.to_numpy()).all()


@pytest.mark.gpu
@needs_gpu
def test_memory_use_is_observable() -> None:
    device = Cuda().device(0)
    gc.collect()
    device.backend.memory_cleanup(device)
    # measured from a cleaned pool: blocks that earlier tests freed inside chunks still holding live
    # arrays stay cached whatever the cleanup does
    before = memory_stats(device)
    # more than the pool holds free, so that the pool has to grow
    count = (before["reserved"] - before["in_use"]) // 4 + 16 * 1024 * 1024
    tensor = Tensor.zeros([count], device, DType.F32) + 1.0
    during = memory_stats(device)
    assert during["in_use"] >= before["in_use"] + 4 * count
    assert during["reserved"] > before["reserved"]
    del tensor
    gc.collect()
    assert memory_stats(device)["in_use"] <= before["in_use"]
    device.backend.memory_cleanup(device)
    stats = memory_stats(device)
    assert stats["reserved"] <= before["reserved"]  # every block cached since is given back


@pytest.mark.gpu
@needs_gpu
def test_a_training_loop_holds_flat_memory() -> None:
    autodiff = pytest.importorskip("burn_autodiff")
    from burn_backend.activation import relu

    device = autodiff.Autodiff(Cuda()).device(0)
    inner = Cuda().device(0)
    rng = np.random.default_rng(0)
    x = Tensor.from_numpy(rng.standard_normal((64, 32)).astype(np.float32), device)
    y = Tensor.from_numpy(rng.standard_normal((64, 1)).astype(np.float32), device)
    w1 = Tensor.random([32, 64], Distribution.normal(0.0, 0.2), device).require_grad()
    w2 = Tensor.random([64, 1], Distribution.normal(0.0, 0.2), device).require_grad()

    def step(w1: Tensor, w2: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        loss = (relu(x.matmul(w1)).matmul(w2) - y).powf_scalar(2.0).mean()
        grads = loss.backward()
        g1, g2 = w1.grad(grads), w2.grad(grads)
        assert g1 is not None
        assert g2 is not None
        w1 = Tensor.from_inner(w1.inner() - g1 * 0.01, device).require_grad()
        w2 = Tensor.from_inner(w2.inner() - g2 * 0.01, device).require_grad()
        return w1, w2, loss

    for _ in range(20):
        w1, w2, loss = step(w1, w2)
    first = loss.into_scalar()
    gc.collect()
    settled = memory_stats(inner)["in_use"]
    for _ in range(1000):
        w1, w2, loss = step(w1, w2)
    last = loss.into_scalar()
    gc.collect()
    assert memory_stats(inner)["in_use"] <= settled
    assert last < first


# -- DLPack -----------------------------------------------------------------------------------------------
def _torch_cuda() -> Any:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs PyTorch with CUDA")
    return torch


@pytest.mark.gpu
@needs_gpu
def test_a_torch_cuda_tensor_round_trips_without_a_copy() -> None:
    torch = _torch_cuda()
    source = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
    tensor = from_dlpack(source)
    assert tensor.device == Cuda().device(0)
    assert tensor.primitive.data.ptr == source.data_ptr()
    back = torch.from_dlpack(tensor)
    assert back.data_ptr() == source.data_ptr()
    assert back.dtype == torch.float32
    assert back.shape == (3, 4)
    np.testing.assert_array_equal(
        (tensor * 2.0).to_numpy(), np.arange(12, dtype=np.float32).reshape(3, 4) * 2
    )


@pytest.mark.gpu
@needs_gpu
def test_from_dlpack_of_host_memory_copies_to_the_gpu() -> None:
    array = np.arange(6, dtype=np.int32).reshape(2, 3)
    tensor = from_dlpack(array)
    assert tensor.device == Cuda().device(0)
    assert tensor.primitive.device.id == 0
    np.testing.assert_array_equal(tensor.to_numpy(), array)


# -- module ops against PyTorch ----------------------------------------------------------------------------
@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize(
    ("stride", "padding", "dilation", "groups"), [(1, 1, 1, 1), (2, 0, 1, 2), (1, 2, 2, 4)]
)
def test_conv2d_and_its_gradients_match_torch(stride: int, padding: int, dilation: int, groups: int) -> None:
    torch = _torch_cuda()
    autodiff = pytest.importorskip("burn_autodiff")
    device = autodiff.Autodiff(Cuda()).device(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8, 13, 11)).astype(np.float32)
    w = rng.standard_normal((12, 8 // groups, 3, 3)).astype(np.float32)
    b = rng.standard_normal(12).astype(np.float32)
    tx, tw, tb = (Tensor.from_numpy(a, device).require_grad() for a in (x, w, b))
    options = ConvOptions((stride,) * 2, (padding,) * 2, (dilation,) * 2, groups)
    y = module.conv2d(tx, tw, tb, options)
    grads = (y * y).sum().backward()
    rx, rw, rb = (torch.tensor(a, device="cuda", requires_grad=True) for a in (x, w, b))
    allowed = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False  # cuDNN's default TF32 rounds to ~1e-3; ours is full f32
    try:
        ry = torch.nn.functional.conv2d(rx, rw, rb, stride, padding, dilation, groups)
        (ry * ry).sum().backward()
    finally:
        torch.backends.cudnn.allow_tf32 = allowed
    np.testing.assert_allclose(y.to_numpy(), ry.detach().cpu().numpy(), rtol=1e-4, atol=1e-3)
    for ours, theirs in ((tx, rx), (tw, rw), (tb, rb)):
        assert theirs.grad is not None
        expected = theirs.grad.cpu().numpy()
        np.testing.assert_allclose(ours.grad(grads).to_numpy(), expected, rtol=1e-4, atol=1e-2)


@pytest.mark.gpu
@needs_gpu
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_convolutions_in_batch_chunks_match_one_chunk(monkeypatch: pytest.MonkeyPatch, rank: int) -> None:
    """A batch whose im2col columns exceed the workspace bound runs in chunks of items, with the same
    forward values and gradients (f64, so only the order of the weight gradient's sums differs)."""
    from burn_cuda._ops import _conv

    autodiff = pytest.importorskip("burn_autodiff")
    device = autodiff.Autodiff(Cuda(float_dtype="f64")).device(0)
    rng = np.random.default_rng(rank)
    x = rng.standard_normal((5, 4, *(7,) * rank))
    w = rng.standard_normal((6, 2, *(3,) * rank))
    convolve = getattr(module, f"conv{rank}d")
    options = ConvOptions((1,) * rank, (1,) * rank, (1,) * rank, 2)

    def run() -> list[np.ndarray]:
        tx, tw = (Tensor.from_numpy(a, device).require_grad() for a in (x, w))
        y = convolve(tx, tw, None, options)
        grads = (y * y).sum().backward()
        return [y.to_numpy(), tx.grad(grads).to_numpy(), tw.grad(grads).to_numpy()]

    whole = run()
    per_item = 4 * 3**rank * 7**rank  # channels * taps * positions
    monkeypatch.setattr(_conv, "_COLUMNS_MAX", 2 * per_item)  # chunks of 2, 2 and 1 items
    for one, chunked in zip(whole, run()):
        np.testing.assert_allclose(chunked, one, rtol=1e-12, atol=1e-12)
