"""Quantized tensors: quantize/dequantize round trips per scheme against a NumPy float64 reference,
per-block scales, packed storage, the ops through the defaults and errors."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

from burn_backend import Device, Tensor, TensorData
from burn_backend.quantization import (
    DEFAULT_OPS,
    QuantizedData,
    QuantParam,
    QuantScheme,
    QuantStore,
    QuantValue,
)

INT_VALUES = [QuantValue.Q8F, QuantValue.Q8S, QuantValue.Q4F, QuantValue.Q4S, QuantValue.Q2F, QuantValue.Q2S]
RANGES = {
    QuantValue.Q8F: (-128, 127), QuantValue.Q8S: (-127, 127), QuantValue.Q4F: (-8, 7),
    QuantValue.Q4S: (-7, 7), QuantValue.Q2F: (-2, 1), QuantValue.Q2S: (-1, 1),
}  # fmt: skip
SCALE_DTYPES = {QuantParam.F32: np.float32, QuantParam.F16: np.float16, QuantParam.BF16: ml_dtypes.bfloat16}


def reference(x: np.ndarray, scheme: QuantScheme) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, scales, near_half) in float64: symmetric scales ``2 max|x| / (qmax - qmin)`` per block,
    rounded to the scale dtype, values ``clip(round_half_even(x / scale))``; ``near_half`` marks values
    whose ``x / scale`` lies within 1e-4 of a rounding boundary (f32 arithmetic may round them the other
    way)."""
    low, high = RANGES[scheme.value]
    block = x.shape[-1] if scheme.block_size is None else scheme.block_size
    blocks = x.astype(np.float64).reshape(*x.shape[:-1], x.shape[-1] // block, block)
    if scheme.block_size is None:
        amax = np.abs(blocks).max(keepdims=True)
    else:
        amax = np.abs(blocks).max(axis=-1, keepdims=True)
    scales = amax / ((high - low) / 2.0)
    scales = np.where(scales > 0, scales, 1.0)
    scales = scales.astype(SCALE_DTYPES[scheme.param]).astype(np.float64)
    ratio = blocks / scales
    values = np.clip(np.rint(ratio), low, high).reshape(x.shape)
    near_half = (np.abs(np.abs(ratio - np.floor(ratio)) - 0.5) < 1e-4).reshape(x.shape)
    return values, scales, near_half


def unpacked(data: QuantizedData) -> np.ndarray:
    """The int values of host data, unpacked here (independently of the library's unpacking)."""
    scheme = data.scheme
    if scheme.store is QuantStore.NATIVE:
        return data.values.astype(np.int64)
    bits = scheme.value.bits
    words = data.values.astype(np.uint64)
    out = []
    for word in words.tolist():
        for lane in range(32 // bits):
            field = (word >> (lane * bits)) & ((1 << bits) - 1)
            out.append(field - (1 << bits) if field >= 1 << (bits - 1) else field)
    count = int(np.prod(list(data.shape)))
    return np.array(out[:count], dtype=np.int64).reshape(list(data.shape))


Q8S = QuantScheme()


def held(make: Any) -> Tensor:
    """``make()``, or a skip where the backend cannot hold the scheme (a clear TypeError saying so)."""
    try:
        tensor: Tensor = make()
    except TypeError as error:
        if "cannot hold the scheme" not in str(error):
            raise
        pytest.skip(str(error))
    return tensor


def schemes() -> list[QuantScheme]:
    out = []
    for value in INT_VALUES:
        for block in (None, 16):
            for store in QuantStore:
                out.append(QuantScheme(value=value, block_size=block, store=store))
    out.append(QuantScheme(param=QuantParam.F16, block_size=16))
    out.append(QuantScheme(value=QuantValue.Q4S, param=QuantParam.BF16, store=QuantStore.PACKED_U32))
    return out


@pytest.fixture
def x(rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal((3, 32)).astype(np.float32)


@pytest.mark.parametrize("scheme", schemes(), ids=str)
def test_quantize_dynamic_round_trip(device: Device, x: np.ndarray, scheme: QuantScheme) -> None:
    q = held(lambda: Tensor.from_data(x, device).quantize_dynamic(scheme))
    assert q.is_quantized
    assert q.quant_scheme == scheme
    assert q.dims() == [3, 32]
    data = q.quantized_data()
    values, scales, near_half = reference(x, scheme)
    got = unpacked(data)
    assert np.all((got == values) | near_half), f"{np.sum(got != values)} values differ from the reference"
    np.testing.assert_array_equal(data.scales.astype(np.float64).reshape(-1), scales.reshape(-1))
    low, high = RANGES[scheme.value]
    assert got.min() >= low
    assert got.max() <= high
    block = x.shape[-1] if scheme.block_size is None else scheme.block_size
    blocked = (*x.shape[:-1], x.shape[-1] // block, block)
    numbers = (got.reshape(blocked) * scales).reshape(x.shape)
    np.testing.assert_allclose(q.dequantize().to_numpy().astype(np.float64), numbers, rtol=1e-6, atol=1e-7)
    # the error of a value inside the range is at most half a step
    step = np.broadcast_to(scales, blocked).reshape(x.shape)
    inside = np.abs(x) <= high * step
    error = np.abs(q.dequantize().to_numpy() - x)
    assert np.all(error[inside] <= step[inside] / 2 + 1e-6)


@pytest.mark.parametrize("scheme", [QuantScheme(), QuantScheme(value=QuantValue.Q4S, block_size=16)], ids=str)
def test_quantize_with_given_scales(device: Device, x: np.ndarray, scheme: QuantScheme) -> None:
    shape = scheme.scales_shape(x.shape)
    scales = np.full(shape if shape else (1,), 0.05, dtype=np.float32)
    q = Tensor.from_data(x, device).quantize(scheme, Tensor.from_data(scales, device))
    low, high = RANGES[scheme.value]
    expected = np.clip(np.rint(x.astype(np.float64) / np.float64(np.float32(0.05))), low, high)
    got = unpacked(q.quantized_data())
    assert np.mean(got == expected) > 0.99
    assert np.all(np.abs(got - expected) <= 1)


@pytest.mark.parametrize("value", [QuantValue.E4M3, QuantValue.E5M2], ids=str)
def test_float8_round_trip(device: Device, x: np.ndarray, value: QuantValue) -> None:
    scheme = QuantScheme(value=value)
    q = held(lambda: Tensor.from_data(x, device).quantize_dynamic(scheme))
    top = float(ml_dtypes.finfo(value.numpy).max)  # type: ignore[no-untyped-call]
    scale = np.float64(np.float32(np.abs(x).max() / top))
    expected = (x.astype(np.float64) / scale).astype(np.float32).astype(value.numpy).astype(
        np.float64
    ) * scale
    np.testing.assert_allclose(q.dequantize().to_numpy().astype(np.float64), expected, rtol=1e-6)


def test_host_data_round_trip(device: Device, x: np.ndarray) -> None:
    scheme = QuantScheme(value=QuantValue.Q4S, block_size=8, store=QuantStore.PACKED_U32)
    data = QuantizedData.quantize(TensorData(x), scheme)
    q = Tensor.from_data(data, device)
    assert q.quantized_data() == data
    np.testing.assert_array_equal(q.dequantize().to_numpy(), data.dequantize().to_numpy())


def quantized(device: Device, x: np.ndarray, scheme: QuantScheme = Q8S) -> tuple[Tensor, np.ndarray]:
    q = Tensor.from_data(x, device).quantize_dynamic(scheme)
    return q, q.dequantize().to_numpy().astype(np.float64)


def requantized(values: np.ndarray, scheme: QuantScheme = Q8S) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    low, high = RANGES[scheme.value]
    scale = np.float64(np.float32(np.abs(values).max() / ((high - low) / 2.0))) or 1.0
    return np.clip(np.rint(values / scale), low, high) * scale


def test_layout_ops_move_the_values(device: Device, rng: np.random.Generator) -> None:
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    for scheme in (QuantScheme(), QuantScheme(value=QuantValue.Q4S, store=QuantStore.PACKED_U32)):
        q, d = quantized(device, x, scheme)
        cases = [
            (q.reshape([6, 4]), d.reshape(6, 4)),
            (q.swap_dims(0, 2), d.swapaxes(0, 2)),
            (q.permute([2, 0, 1]), d.transpose(2, 0, 1)),
            (q.flip([1]), d[:, ::-1]),
            (q.transpose(), d.swapaxes(1, 2)),
            (q[:, 1:3], d[:, 1:3]),
        ]
        for got, expected in cases:
            assert got.is_quantized
            np.testing.assert_array_equal(got.dequantize().to_numpy().astype(np.float64), expected)


def test_arithmetic_through_the_defaults(device: Device, rng: np.random.Generator) -> None:
    a, da = quantized(device, rng.standard_normal((4, 8)).astype(np.float32))
    b, db = quantized(device, rng.standard_normal((4, 8)).astype(np.float32))
    for got, expected in [(a + b, da + db), (a - b, da - db), (a * b, da * db), (a * 2.0, da * 2.0)]:
        assert got.is_quantized
        np.testing.assert_allclose(got.dequantize().to_numpy(), requantized(expected), rtol=1e-5, atol=1e-6)


def test_matmul_against_numpy(device: Device, rng: np.random.Generator) -> None:
    lhs, dl = quantized(device, rng.standard_normal((5, 16)).astype(np.float32))
    rhs, dr = quantized(device, rng.standard_normal((16, 3)).astype(np.float32))
    float_lhs = rng.standard_normal((2, 5, 16)).astype(np.float32)
    for got, expected in [
        (lhs.matmul(rhs), dl @ dr),
        (Tensor.from_data(float_lhs, device).matmul(rhs), float_lhs.astype(np.float64) @ dr),
        (lhs.matmul(Tensor.from_data(dr.astype(np.float32), device)), dl @ dr),
    ]:
        assert not got.is_quantized
        assert got.dims() == list(expected.shape)
        np.testing.assert_allclose(got.to_numpy(), expected, rtol=1e-4, atol=1e-4)
    blocked, db = quantized(
        device, rng.standard_normal((16, 32)).astype(np.float32), QuantScheme(block_size=16)
    )
    np.testing.assert_allclose(lhs.matmul(blocked).to_numpy(), dl @ db, rtol=1e-4, atol=1e-4)


DEFAULT_CALLS: dict[str, Any] = {
    "expand": lambda b, q, i: b.q_expand(b.q_reshape(q, (1, 4, 8)), (2, 4, 8)),
    "select": lambda b, q, i: b.q_select(q, 0, i),
    "slice": lambda b, q, i: b.q_slice(q, [slice(0, 2, 1), slice(0, 8, 1)]),
    "gather": lambda b, q, i: b.q_gather(q, 0, b.int_expand(b.int_reshape(i, (2, 1)), (2, 8))),
    "repeat_dim": lambda b, q, i: b.q_repeat_dim(q, 0, 2),
    "cat": lambda b, q, i: b.q_cat([q, q], 0),
    "clamp": lambda b, q, i: b.q_clamp(q, -0.5, 0.5),
    "clamp_min": lambda b, q, i: b.q_clamp_min(q, 0.0),
    "clamp_max": lambda b, q, i: b.q_clamp_max(q, 0.0),
    "log": lambda b, q, i: b.q_log(b.q_abs(q)),
    "sqrt": lambda b, q, i: b.q_sqrt(b.q_abs(q)),
    "powf": lambda b, q, i: b.q_powf(b.q_abs(q), q),
    "powi": lambda b, q, i: b.q_powi(q, b.int_full((4, 8), 2, i_device(b, i), b.int_dtype)),
    "powi_scalar": lambda b, q, i: b.q_powi_scalar(q, 2),
    "powf_scalar": lambda b, q, i: b.q_powf_scalar(b.q_abs(q), 0.5),
    "argtopk": lambda b, q, i: b.q_argtopk(q, 1, 2),
    "topk": lambda b, q, i: b.q_topk(q, 1, 2),
    "topk_with_indices": lambda b, q, i: b.q_topk_with_indices(q, 1, 2),
    "sort": lambda b, q, i: b.q_sort(q, 1, False),
    "sort_with_indices": lambda b, q, i: b.q_sort_with_indices(q, 1, True),
    "argsort": lambda b, q, i: b.q_argsort(q, 1, False),
}


def i_device(backend: Any, indices: Any) -> Device:
    device: Device = backend.float_device(backend.int_into_float(indices, backend.float_dtype))
    return device


def call_default(backend: Any, name: str, q: Any, indices: Any) -> Any:
    special = DEFAULT_CALLS.get(name)
    if special is not None:
        return special(backend, q, indices)
    method = getattr(backend, f"q_{name}")
    if name.endswith("_scalar"):
        return method(q, 1.5)
    if name in ("add", "sub", "mul", "div"):
        return method(q, q)
    if name.endswith("_dim") or name.endswith("_dim_with_indices") or name in (
        "cumsum", "cumprod", "cummin", "cummax", "argmax", "argmin",
    ):  # fmt: skip
        return method(q, 1)
    return method(q)


@pytest.mark.parametrize("name", DEFAULT_OPS)
def test_every_default_is_the_float_op_on_dequantized_values(
    device: Device, name: str, rng: np.random.Generator
) -> None:
    backend = device.backend
    x = rng.uniform(0.2, 1.0, (4, 8)).astype(np.float32) * rng.choice([-1.0, 1.0], (4, 8)).astype(np.float32)
    q = Tensor.from_data(x, device).quantize_dynamic(QuantScheme())
    indices = Tensor.from_data([2, 0], device).primitive
    result = call_default(backend, name, q.primitive, indices)
    # the same call on the dequantized values through the float op, then requantized on the host
    float_backend_q = Tensor.from_data(q.dequantize().to_numpy(), device).primitive
    float_result = call_default(_FloatView(backend), name, float_backend_q, indices)
    for got, expected in zip(_flat(result), _flat(float_result)):
        if getattr(got, "dtype", None) == QuantScheme():
            host = backend.float_into_data(expected).to_numpy().astype(np.float64)
            np.testing.assert_allclose(
                Tensor.from_primitive(got, device).dequantize().to_numpy(),
                requantized(host),
                rtol=1e-5,
                atol=1e-6,
            )
        else:
            np.testing.assert_array_equal(
                Tensor.from_primitive(got, device).to_numpy(),
                Tensor.from_primitive(expected, device).to_numpy(),
            )


class _FloatView:
    """The backend with ``q_<name>`` meaning ``float_<name>``: the reference calls of the test above."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend

    def __getattr__(self, name: str) -> Any:
        if name.startswith("q_"):
            return getattr(self._backend, "float_" + name[2:])
        return getattr(self._backend, name)


def _flat(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def test_quantized_tensors_are_constants(device: Device, x: np.ndarray) -> None:
    q = Tensor.from_data(x, device).quantize_dynamic(QuantScheme())
    assert not q.is_require_grad()
    assert q.detach() is q
    with pytest.raises(TypeError, match="constant"):
        q.require_grad()
    backend = device.backend
    assert backend.q_into_data(backend.q_detach(q.primitive)) == q.quantized_data()
    assert not backend.q_is_require_grad(q.primitive)
    unmarked = backend.q_set_require_grad(q.primitive, False)
    assert backend.q_into_data(unmarked) == q.quantized_data()
    moved = q.to_device(device)
    assert moved.to_data() == q.quantized_data()


def test_errors(device: Device, x: np.ndarray) -> None:
    tensor = Tensor.from_data(x, device)
    with pytest.raises(ValueError, match=r"block size 5 .* does not divide the last dim \(32\)"):
        tensor.quantize_dynamic(QuantScheme(block_size=5))
    with pytest.raises(ValueError, match=r"scales of shape \[2\]"):
        tensor.quantize(QuantScheme(), Tensor.from_data([0.1, 0.2], device))
    q = tensor.quantize_dynamic(QuantScheme())
    with pytest.raises(TypeError, match="bitwise_and: expected an Int tensor, got a quantized Float q8s"):
        q.bitwise_and(q)
    with pytest.raises(TypeError, match="into_int: not defined on quantized tensors"):
        q.int()
    with pytest.raises(TypeError, match="acos: not defined on quantized tensors"):
        q.acos()
    with pytest.raises(TypeError, match="quantize_dynamic: the tensor is quantized already"):
        q.quantize_dynamic(QuantScheme())
    with pytest.raises(TypeError, match="dtype: the tensor is quantized"):
        _ = q.dtype
    with pytest.raises(TypeError, match="quantize_dynamic: expected a Float tensor"):
        Tensor.from_data([1, 2], device).quantize_dynamic(QuantScheme())
