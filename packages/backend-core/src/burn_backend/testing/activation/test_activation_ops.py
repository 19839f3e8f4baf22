"""The ``ActivationOps`` kernels, forward and backward, called on the backend and as the interface's
defaults (unbound, on the backend under test), so the defaults are proven even where a backend
overrides them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from burn_backend import ActivationOps, Device, DType, Tensor, Tolerance
from burn_backend.testing import check, make, random_array, require_dtype
from burn_backend.testing.activation import _reference as ref

IMPLS = ("backend", "default")
ALL_FLOATS = (DType.F64, DType.F32, DType.F16, DType.BF16)
WIDE_FLOATS = (DType.F64, DType.F32)
SPECIAL_VALUES = (-100.0, -30.0, -3.0, -0.5, 0.0, 0.5, 3.0, 30.0, 100.0)


def call(device: Device, impl: str, name: str, *args: Any) -> Tensor:
    """``name`` of the backend (``impl="backend"``) or the interface's default, wrapped as a tensor."""
    backend = device.backend
    primitives = [a.primitive if isinstance(a, Tensor) else a for a in args]
    if impl == "backend":
        result = getattr(backend, name)(*primitives)
    else:
        result = getattr(ActivationOps, name)(backend, *primitives)
    return Tensor.from_primitive(result, device)


def inputs(rng: np.random.Generator, dtype: DType, shape: tuple[int, ...] = (4, 9)) -> np.ndarray[Any, Any]:
    """Random values in [-8, 8) with a last row of special values (large magnitudes, 0, +-0.5)."""
    values = random_array(rng, shape, DType.F64, -8.0, 8.0)
    if len(shape) == 2 and shape[1] == len(SPECIAL_VALUES):
        values[-1] = SPECIAL_VALUES
    return values.astype(dtype.numpy)


# -- element-wise forward kernels -----------------------------------------------------------------
ELEMENTWISE: dict[str, tuple[tuple[Any, ...], Callable[[Any], Any]]] = {
    "relu": ((), ref.relu),
    "gelu": ((), ref.gelu),
    "sigmoid": ((), ref.sigmoid),
    "log_sigmoid": ((), ref.log_sigmoid),
    "leaky_relu": ((0.2,), lambda x: ref.leaky_relu(x, 0.2)),
    "hard_sigmoid": ((0.2, 0.5), lambda x: ref.hard_sigmoid(x, 0.2, 0.5)),
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", ALL_FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_kernel(
    device: Device, rng: np.random.Generator, name: str, dtype: DType, impl: str
) -> None:
    require_dtype(device, dtype)
    args, reference = ELEMENTWISE[name]
    x = inputs(rng, dtype)
    check(call(device, impl, name, make(x, device), *args), reference(x), dtype)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("shape", [(), (1,), (0,), (2, 0, 3), (2, 3, 4, 5)], ids=str)
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_elementwise_kernel_shapes(
    device: Device, rng: np.random.Generator, name: str, shape: tuple[int, ...], impl: str
) -> None:
    args, reference = ELEMENTWISE[name]
    x = random_array(rng, shape, DType.F32, -5.0, 5.0)
    check(call(device, impl, name, make(x, device), *args), reference(x), DType.F32)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("slope", [0.0, 0.01, 0.5, 1.0, -0.5, 3.0])
def test_leaky_relu_slopes(device: Device, rng: np.random.Generator, slope: float, impl: str) -> None:
    x = inputs(rng, DType.F64)
    check(call(device, impl, "leaky_relu", make(x, device), slope), ref.leaky_relu(x, slope), DType.F64)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize(("alpha", "beta"), [(0.2, 0.5), (1 / 6, 0.5), (1.0, 0.0), (-0.5, 0.25), (0.0, 0.7)])
def test_hard_sigmoid_parameters(
    device: Device, rng: np.random.Generator, alpha: float, beta: float, impl: str
) -> None:
    x = inputs(rng, DType.F64)
    result = call(device, impl, "hard_sigmoid", make(x, device), alpha, beta)
    check(result, ref.hard_sigmoid(x, alpha, beta), DType.F64)
    values = result.to_numpy()
    assert values.min() >= 0.0
    assert values.max() <= 1.0


@pytest.mark.parametrize("impl", IMPLS)
def test_relu_keeps_nan_and_zeroes_negative_infinity(device: Device, impl: str) -> None:
    x = np.array([np.nan, -np.inf, np.inf, -0.0, 2.0])
    check(call(device, impl, "relu", make(x, device)), [np.nan, 0.0, np.inf, 0.0, 2.0], DType.F64)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", ALL_FLOATS, ids=str)
def test_sigmoid_and_log_sigmoid_at_infinities(device: Device, dtype: DType, impl: str) -> None:
    require_dtype(device, dtype)
    x = make(np.array([-np.inf, np.inf], dtype=dtype.numpy), device)
    check(call(device, impl, "sigmoid", x), [0.0, 1.0], dtype)
    check(call(device, impl, "log_sigmoid", x), [-np.inf, 0.0], dtype)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", ALL_FLOATS, ids=str)
def test_log_sigmoid_is_stable_for_large_magnitudes(device: Device, dtype: DType, impl: str) -> None:
    require_dtype(device, dtype)
    big = 60000.0 if dtype is DType.F16 else 1e30
    x = np.array([-big, -1000.0, -100.0, -40.0, 40.0, 100.0, 1000.0, big]).astype(dtype.numpy)
    result = call(device, impl, "log_sigmoid", make(x, device))
    check(result, ref.log_sigmoid(x), dtype)
    assert np.isfinite(result.to_numpy().astype(np.float64)).all()


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", WIDE_FLOATS, ids=str)
def test_sigmoid_keeps_relative_precision_of_tiny_values(device: Device, dtype: DType, impl: str) -> None:
    # 1 / (1 + exp(-x)) would lose nothing here either, but 1 - sigmoid(-x) or tanh forms lose all digits
    x = np.array([-80.0, -60.0, -30.0, -17.0] if dtype is DType.F32 else [-700.0, -300.0, -60.0, -37.0])
    x = x.astype(dtype.numpy)
    result = call(device, impl, "sigmoid", make(x, device))
    relative = Tolerance(Tolerance.for_dtype(dtype).relative * 10, 0.0)
    check(result, ref.sigmoid(x), dtype, tolerance=relative)
    check(call(device, impl, "log_sigmoid", make(-x, device)), ref.log_sigmoid(-x), dtype, tolerance=relative)


# -- softmax family ---------------------------------------------------------------------------------
SOFTMAXES: dict[str, Callable[[Any, int], Any]] = {
    "softmax": ref.softmax,
    "log_softmax": ref.log_softmax,
    "softmin": ref.softmin,
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", ALL_FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(SOFTMAXES))
def test_softmax_kernel(device: Device, rng: np.random.Generator, name: str, dtype: DType, impl: str) -> None:
    require_dtype(device, dtype)
    x = random_array(rng, (3, 7), dtype, -5.0, 5.0)
    check(call(device, impl, name, make(x, device), 1), SOFTMAXES[name](x, 1), dtype)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize(
    ("shape", "dim"),
    [((5,), 0), ((3, 4), 0), ((3, 4), 1), ((2, 3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4), 2), ((2, 1, 4), 1)],
    ids=str,
)
@pytest.mark.parametrize("name", sorted(SOFTMAXES))
def test_softmax_kernel_dims(
    device: Device, rng: np.random.Generator, name: str, shape: tuple[int, ...], dim: int, impl: str
) -> None:
    x = random_array(rng, shape, DType.F64, -4.0, 4.0)
    result = call(device, impl, name, make(x, device), dim)
    check(result, SOFTMAXES[name](x, dim), DType.F64)
    if name != "log_softmax":
        sums = result.to_numpy().sum(axis=dim)
        np.testing.assert_allclose(sums, 1.0, rtol=1e-12)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize(("shape", "dim"), [((0, 4), 1), ((3, 0), 1), ((3, 0), 0), ((0,), 0)], ids=str)
@pytest.mark.parametrize("name", sorted(SOFTMAXES))
def test_softmax_kernel_empty(device: Device, name: str, shape: tuple[int, ...], dim: int, impl: str) -> None:
    x = np.zeros(shape, dtype=np.float32)
    check(call(device, impl, name, make(x, device), dim), x, DType.F32)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", WIDE_FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(SOFTMAXES))
def test_softmax_kernel_is_stable_for_large_values(
    device: Device, name: str, dtype: DType, impl: str
) -> None:
    x = np.array(
        [[1000.0, 1001.0, 1002.0, 999.0], [-1000.0, -1001.0, -1002.0, -999.0], [3000.0, 0.0, -3000.0, 2999.0]]
    ).astype(dtype.numpy)
    result = call(device, impl, name, make(x, device), 1)
    assert not np.isnan(result.to_numpy().astype(np.float64)).any()
    check(result, SOFTMAXES[name](x, 1), dtype)


@pytest.mark.parametrize("impl", IMPLS)
def test_softmax_of_one_element_is_one(device: Device, impl: str) -> None:
    x = make(np.array([[-1e30], [0.0], [1e30]]), device)
    check(call(device, impl, "softmax", x, 1), np.ones((3, 1)), DType.F64)
    check(call(device, impl, "log_softmax", x, 1), np.zeros((3, 1)), DType.F64)


# -- prelu ------------------------------------------------------------------------------------------
ALPHA_FORMS = ("one-of-rank", "channels-of-rank", "one", "channels")


def alpha_of(form: str, channels: int, rank: int, rng: np.random.Generator, dtype: DType) -> Any:
    count = 1 if form.startswith("one") else channels
    slopes = random_array(rng, (count,), dtype, -0.5, 1.5)
    if form.endswith("of-rank"):
        shape = [1] * rank
        shape[1] = count
        slopes = slopes.reshape(shape)
    return slopes


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", ALL_FLOATS, ids=str)
@pytest.mark.parametrize("form", ALPHA_FORMS)
def test_prelu_kernel(device: Device, rng: np.random.Generator, form: str, dtype: DType, impl: str) -> None:
    require_dtype(device, dtype)
    x = random_array(rng, (2, 3, 4), dtype, -4.0, 4.0)
    alpha = alpha_of(form, 3, 3, rng, dtype)
    broadcast = alpha.reshape([1, -1, 1]) if alpha.ndim == 1 else alpha
    result = call(device, impl, "prelu", make(x, device), make(alpha, device))
    check(result, ref.prelu(x, broadcast), dtype)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 3, 2, 2)], ids=str)
def test_prelu_kernel_ranks(
    device: Device, rng: np.random.Generator, shape: tuple[int, ...], impl: str
) -> None:
    x = random_array(rng, shape, DType.F64, -4.0, 4.0)
    alpha = np.array([0.25])
    check(call(device, impl, "prelu", make(x, device), make(alpha, device)), ref.prelu(x, 0.25), DType.F64)
    if len(shape) >= 2:
        per_channel = np.linspace(-1.0, 1.0, shape[1])
        broadcast = per_channel.reshape([1, -1] + [1] * (len(shape) - 2))
        result = call(device, impl, "prelu", make(x, device), make(broadcast, device))
        check(result, ref.prelu(x, broadcast), DType.F64)


# -- backward kernels -------------------------------------------------------------------------------
def backward_case(name: str, rng: np.random.Generator, dtype: DType) -> tuple[Any, Any, Any]:
    """The first argument of the backward kernel ``name``, the incoming gradient, and the expected."""
    grad = random_array(rng, (4, 9), dtype, -2.0, 2.0)
    if name == "relu_backward":
        output = ref.relu(inputs(rng, dtype)).astype(dtype.numpy)
        return output, grad, np.where(output > 0, grad.astype(np.float64), 0.0)
    if name == "sigmoid_backward":
        output = ref.sigmoid(inputs(rng, dtype)).astype(dtype.numpy)
        o = ref.wide(output)
        return output, grad, ref.wide(grad) * o * (1 - o)
    x = inputs(rng, dtype)
    if name == "gelu_backward":
        return x, grad, ref.wide(grad) * ref.gelu_derivative(x)
    return x, grad, ref.wide(grad) * ref.sigmoid(-ref.wide(x))


BACKWARD = ("relu_backward", "sigmoid_backward", "gelu_backward", "log_sigmoid_backward")
TAKES_OUTPUT = ("relu_backward", "sigmoid_backward")  # the others take the forward's input
FORWARD_OF = {
    "relu_backward": "relu",
    "sigmoid_backward": "sigmoid",
    "gelu_backward": "gelu",
    "log_sigmoid_backward": "log_sigmoid",
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", ALL_FLOATS, ids=str)
@pytest.mark.parametrize("name", BACKWARD)
def test_backward_kernel(
    device: Device, rng: np.random.Generator, name: str, dtype: DType, impl: str
) -> None:
    require_dtype(device, dtype)
    first, grad, expected = backward_case(name, rng, dtype)
    result = call(device, impl, name, make(first, device), make(grad, device))
    check(result, expected, dtype, scale=2.0 if dtype in (DType.F16, DType.BF16) else 1.0)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name", BACKWARD)
def test_backward_kernel_matches_finite_differences(
    device: Device, rng: np.random.Generator, name: str, impl: str
) -> None:
    # away from relu's kink; central differences of the forward kernel, in f64
    x = random_array(rng, (3, 5), DType.F64, 0.05, 6.0) * rng.choice([-1.0, 1.0], (3, 5))
    grad = random_array(rng, (3, 5), DType.F64, -2.0, 2.0)
    forward = FORWARD_OF[name]
    step = 1e-6
    plus = call(device, impl, forward, make(x + step, device)).to_numpy()
    minus = call(device, impl, forward, make(x - step, device)).to_numpy()
    expected = grad * (plus - minus) / (2 * step)
    x_tensor = make(x, device)
    first = call(device, impl, forward, x_tensor) if name in TAKES_OUTPUT else x_tensor
    result = call(device, impl, name, first, make(grad, device))
    check(result, expected, DType.F64, tolerance=Tolerance(1e-6, 1e-8))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("shape", [(), (0, 3)], ids=str)
@pytest.mark.parametrize("name", BACKWARD)
def test_backward_kernel_shapes(device: Device, name: str, shape: tuple[int, ...], impl: str) -> None:
    first = np.full(shape, 0.75)
    grad = np.full(shape, 2.0)
    expected = {
        "relu_backward": 2.0,
        "sigmoid_backward": 2.0 * 0.75 * 0.25,
        "gelu_backward": 2.0 * float(ref.gelu_derivative(0.75)),
        "log_sigmoid_backward": 2.0 * float(ref.sigmoid(-0.75)),
    }[name]
    result = call(device, impl, name, make(first, device), make(grad, device))
    check(result, np.full(shape, expected), DType.F64)


@pytest.mark.parametrize("impl", IMPLS)
def test_log_sigmoid_backward_is_stable_for_large_magnitudes(device: Device, impl: str) -> None:
    x = np.array([-1000.0, -100.0, 100.0, 700.0])
    result = call(device, impl, "log_sigmoid_backward", make(x, device), make(np.ones(4), device))
    check(result, [1.0, 1.0, float(np.exp(-100.0)), float(np.exp(-700.0))], DType.F64)


# -- values, not references -------------------------------------------------------------------------
OP_ARGS: dict[str, tuple[Any, ...]] = {
    "relu": (),
    "gelu": (),
    "sigmoid": (),
    "log_sigmoid": (),
    "leaky_relu": (0.1,),
    "hard_sigmoid": (0.2, 0.5),
    "softmax": (1,),
    "log_softmax": (1,),
    "softmin": (0,),
    "prelu": ("alpha",),
    "relu_backward": ("grad",),
    "sigmoid_backward": ("grad",),
    "gelu_backward": ("grad",),
    "log_sigmoid_backward": ("grad",),
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name", sorted(OP_ARGS))
def test_kernel_leaves_its_inputs_unchanged(
    device: Device, rng: np.random.Generator, name: str, impl: str
) -> None:
    x_values = random_array(rng, (3, 4), DType.F32, -3.0, 3.0)
    other_values = random_array(rng, (3, 4), DType.F32, -3.0, 3.0)
    alpha_values = np.array([[0.1, -0.2, 0.3, 0.4]], dtype=np.float32)
    x, other, alpha = make(x_values, device), make(other_values, device), make(alpha_values, device)
    args: list[Any] = [x]
    for arg in OP_ARGS[name]:
        args.append(other if arg == "grad" else alpha if arg == "alpha" else arg)
    call(device, impl, name, *args)
    np.testing.assert_array_equal(x.to_numpy(), x_values)
    np.testing.assert_array_equal(other.to_numpy(), other_values)
    np.testing.assert_array_equal(alpha.to_numpy(), alpha_values)


@pytest.mark.parametrize("impl", IMPLS)
def test_known_values(device: Device, impl: str) -> None:
    x = make(np.array([-2.0, -1.0, 0.0, 1.0, 2.0]), device)
    check(call(device, impl, "relu", x), [0.0, 0.0, 0.0, 1.0, 2.0], DType.F64)
    check(call(device, impl, "leaky_relu", x, 0.5), [-1.0, -0.5, 0.0, 1.0, 2.0], DType.F64)
    check(call(device, impl, "hard_sigmoid", x, 0.25, 0.5), [0.0, 0.25, 0.5, 0.75, 1.0], DType.F64)
    known = {
        "sigmoid": [0.11920292202211755, 0.2689414213699951, 0.5, 0.7310585786300049, 0.8807970779778823],
        "gelu": [-0.04550026389635844, -0.15865525393145707, 0.0, 0.8413447460685429, 1.9544997361036416],
        "log_sigmoid": [
            -2.1269280110429727,
            -1.3132616875182228,
            -0.6931471805599453,
            -0.31326168751822286,
            -0.1269280110429725,
        ],
    }
    for name, expected in known.items():
        check(call(device, impl, name, x), expected, DType.F64)
    softmax = [
        0.011656230956039609,
        0.03168492079612427,
        0.0861285444362687,
        0.23412165725273662,
        0.6364086465588308,
    ]
    check(call(device, impl, "softmax", x, 0), softmax, DType.F64)
    check(call(device, impl, "softmin", x, 0), softmax[::-1], DType.F64)
