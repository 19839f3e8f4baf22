"""The activation functions of ``burn_backend.activation``: values against NumPy references in extended
precision (and PyTorch in float64 where installed), shapes, dtypes, dims, and their errors."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, activation
from burn_backend.testing import _spy, check, make, random_array, require_dtype
from burn_backend.testing.activation import _reference as ref

WIDE_FLOATS = (DType.F64, DType.F32)
LOW_FLOATS = (DType.F16, DType.BF16)
SPECIAL_VALUES = (-50.0, -20.0, -3.0, -0.5, 0.0, 0.5, 3.0, 20.0, 50.0)


@dataclass(frozen=True)
class Case:
    """An element-wise activation: the function's name, its keyword arguments, the reference."""

    name: str
    kwargs: dict[str, Any]
    reference: Callable[[Any], Any]
    label: str = ""

    @property
    def id(self) -> str:
        return self.label or self.name

    def __call__(self, tensor: Tensor) -> Tensor:
        return getattr(activation, self.name)(tensor, **self.kwargs)  # type: ignore[no-any-return]


ELEMENTWISE = [
    Case("relu", {}, ref.relu),
    Case("relu6", {}, ref.relu6),
    Case("leaky_relu", {}, lambda x: ref.leaky_relu(x, 0.01)),
    Case("leaky_relu", {"negative_slope": 0.3}, lambda x: ref.leaky_relu(x, 0.3), "leaky_relu-0.3"),
    Case("rrelu", {}, lambda x: ref.leaky_relu(x, (1 / 8 + 1 / 3) / 2)),
    Case("gelu", {}, ref.gelu),
    Case("gelu", {"approximate": "tanh"}, ref.gelu_tanh, "gelu-tanh"),
    Case("gelu_tanh", {}, ref.gelu_tanh),
    Case("sigmoid", {}, ref.sigmoid),
    Case("silu", {}, ref.silu),
    Case("swish", {}, ref.silu),
    Case("hard_sigmoid", {}, lambda x: ref.hard_sigmoid(x, 0.2, 0.5)),
    Case(
        "hard_sigmoid",
        {"alpha": 0.5, "beta": 0.25},
        lambda x: ref.hard_sigmoid(x, 0.5, 0.25),
        "hard_sigmoid-0.5",
    ),
    Case("hard_swish", {}, ref.hard_swish),
    Case("log_sigmoid", {}, ref.log_sigmoid),
    Case("softplus", {}, ref.softplus),
    Case("softplus", {"beta": 2.0, "threshold": 5.0}, lambda x: ref.softplus(x, 2.0, 5.0), "softplus-2-5"),
    Case("softsign", {}, ref.softsign),
    Case("mish", {}, ref.mish),
    Case("tanh", {}, ref.tanh),
    Case("tanhshrink", {}, ref.tanhshrink),
    Case("hardtanh", {}, ref.hardtanh),
    Case("hardtanh", {"min_val": -2.0, "max_val": 0.5}, lambda x: ref.hardtanh(x, -2.0, 0.5), "hardtanh-2"),
    Case("elu", {}, ref.elu),
    Case("elu", {"alpha": 0.5}, lambda x: ref.elu(x, 0.5), "elu-0.5"),
    Case("selu", {}, ref.selu),
    Case("celu", {}, ref.celu),
    Case("celu", {"alpha": 2.0}, lambda x: ref.celu(x, 2.0), "celu-2"),
    Case("threshold", {"threshold": 0.5, "value": -7.0}, lambda x: ref.threshold(x, 0.5, -7.0)),
    Case("thresholded_relu", {}, ref.thresholded_relu),
    Case(
        "thresholded_relu", {"alpha": -1.0}, lambda x: ref.thresholded_relu(x, -1.0), "thresholded_relu-neg"
    ),
    Case("hard_shrink", {}, ref.hard_shrink),
    Case("hard_shrink", {"lambd": 2.0}, lambda x: ref.hard_shrink(x, 2.0), "hard_shrink-2"),
    Case("soft_shrink", {}, ref.soft_shrink),
    Case("soft_shrink", {"lambd": 0.0}, lambda x: ref.soft_shrink(x, 0.0), "soft_shrink-0"),
    Case("shrink", {}, ref.shrink),
    Case("shrink", {"lambd": 1.0, "bias": 0.25}, lambda x: ref.shrink(x, 1.0, 0.25), "shrink-bias"),
]
ELEMENTWISE_IDS = [case.id for case in ELEMENTWISE]

# The functions with a ``dim``: (name, the reference, whether the dim halves).
ALONG_DIM: dict[str, Callable[[Any, int], Any]] = {
    "softmax": ref.softmax,
    "log_softmax": ref.log_softmax,
    "softmin": ref.softmin,
    "quiet_softmax": ref.quiet_softmax,
    "glu": ref.glu,
    "swiglu": ref.swiglu,
}


def inputs(rng: np.random.Generator, dtype: DType, low: float = -8.0, high: float = 8.0) -> Any:
    """Random values with a last row of special ones (large magnitudes, 0, the +-0.5 boundaries)."""
    values = random_array(rng, (4, len(SPECIAL_VALUES)), DType.F64, low, high)
    values[-1] = np.clip(SPECIAL_VALUES, low * 10, high * 10)
    return values.astype(dtype.numpy)


# -- element-wise functions -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", WIDE_FLOATS, ids=str)
@pytest.mark.parametrize("case", ELEMENTWISE, ids=ELEMENTWISE_IDS)
def test_function(device: Device, rng: np.random.Generator, case: Case, dtype: DType) -> None:
    x = inputs(rng, dtype)
    check(case(make(x, device)), case.reference(x), dtype)


@pytest.mark.parametrize("dtype", LOW_FLOATS, ids=str)
@pytest.mark.parametrize("case", ELEMENTWISE, ids=ELEMENTWISE_IDS)
def test_function_low_precision(device: Device, rng: np.random.Generator, case: Case, dtype: DType) -> None:
    require_dtype(device, dtype)
    x = inputs(rng, dtype, -4.0, 4.0)
    # compositions of several ops round several times
    check(case(make(x, device)), case.reference(x), dtype, scale=4.0)


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (2, 3, 2, 2)], ids=str)
@pytest.mark.parametrize("case", ELEMENTWISE, ids=ELEMENTWISE_IDS)
def test_function_shapes(
    device: Device, rng: np.random.Generator, case: Case, shape: tuple[int, ...]
) -> None:
    x = random_array(rng, shape, DType.F32, -4.0, 4.0)
    check(case(make(x, device)), case.reference(x), DType.F32)


@pytest.mark.parametrize("case", ELEMENTWISE, ids=ELEMENTWISE_IDS)
def test_function_rejects_int_tensors(device: Device, case: Case) -> None:
    x = make(np.array([1, -2, 3], dtype=np.int64), device)
    with pytest.raises(TypeError, match=rf"^{case.name}: expected a Float tensor, got an Int"):
        case(x)


@pytest.mark.parametrize("name", ["relu", "sigmoid", "softmax", "glu", "gelu", "prelu", "mish", "celu"])
def test_function_rejects_bool_tensors_and_non_tensors(device: Device, name: str) -> None:
    function = getattr(activation, name)
    extra: tuple[Any, ...] = (0,) if name in ("softmax", "glu") else (0.5,) if name == "prelu" else ()
    with pytest.raises(TypeError, match=rf"^{name}: expected a Float tensor, got a Bool"):
        function(make(np.array([True, False]), device), *extra)
    with pytest.raises(TypeError, match=rf"^{name}: expected a Float tensor, got list"):
        function([1.0, 2.0], *extra)


# -- along a dim ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", WIDE_FLOATS, ids=str)
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2, -3])
@pytest.mark.parametrize("name", sorted(ALONG_DIM))
def test_function_along_dim(
    device: Device, rng: np.random.Generator, name: str, dim: int, dtype: DType
) -> None:
    x = random_array(rng, (2, 4, 6), dtype, -5.0, 5.0)
    check(getattr(activation, name)(make(x, device), dim), ALONG_DIM[name](x, dim), dtype)


@pytest.mark.parametrize("dtype", LOW_FLOATS, ids=str)
@pytest.mark.parametrize("name", sorted(ALONG_DIM))
def test_function_along_dim_low_precision(
    device: Device, rng: np.random.Generator, name: str, dtype: DType
) -> None:
    require_dtype(device, dtype)
    x = random_array(rng, (3, 8), dtype, -4.0, 4.0)
    check(getattr(activation, name)(make(x, device), -1), ALONG_DIM[name](x, -1), dtype, scale=4.0)


@pytest.mark.parametrize("dtype", WIDE_FLOATS, ids=str)
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "softmin", "quiet_softmax"])
def test_softmaxes_are_stable_for_large_values(device: Device, name: str, dtype: DType) -> None:
    x = np.array(
        [[1000.0, 1001.0, 1002.0, 999.0], [-1000.0, -1001.0, -1002.0, -999.0], [3000.0, 0.0, -3000.0, 2999.0]]
    ).astype(dtype.numpy)
    result = getattr(activation, name)(make(x, device), 1)
    assert np.isfinite(result.to_numpy().astype(np.float64)).all()
    check(result, ALONG_DIM[name](x, 1), dtype)


@pytest.mark.parametrize(("shape", "dim"), [((0, 4), -1), ((4, 0), 1), ((4, 0), 0), ((0,), 0)], ids=str)
@pytest.mark.parametrize("name", sorted(ALONG_DIM))
def test_function_along_dim_of_empty_tensor(
    device: Device, name: str, shape: tuple[int, ...], dim: int
) -> None:
    x = np.zeros(shape, dtype=np.float32)
    expected_shape = list(shape)
    if name in ("glu", "swiglu"):
        expected_shape[dim] //= 2
    check(getattr(activation, name)(make(x, device), dim), np.zeros(expected_shape), DType.F32)


@pytest.mark.parametrize("dim", [2, -3, 5])
@pytest.mark.parametrize("name", sorted(ALONG_DIM))
def test_function_rejects_a_dim_out_of_range(device: Device, name: str, dim: int) -> None:
    x = make(np.zeros((2, 4)), device)
    with pytest.raises(IndexError, match=rf"^{name}: dim {dim} is out of range for a tensor of rank 2"):
        getattr(activation, name)(x, dim)


@pytest.mark.parametrize("name", sorted(ALONG_DIM))
def test_function_along_dim_rejects_rank_0(device: Device, name: str) -> None:
    with pytest.raises(IndexError, match=rf"^{name}: dim -1 is out of range for a tensor of rank 0"):
        getattr(activation, name)(make(np.float64(1.0), device), -1)


@pytest.mark.parametrize("name", ["glu", "swiglu"])
@pytest.mark.parametrize("dim", [0, -1])
def test_gated_units_reject_an_odd_dim(device: Device, name: str, dim: int) -> None:
    x = make(np.zeros((3, 5)), device)
    with pytest.raises(ValueError, match=rf"^{name}: dim {dim} of a tensor of shape \[3, 5\] has odd size"):
        getattr(activation, name)(x, dim)


@pytest.mark.parametrize("name", ["glu", "swiglu"])
def test_gated_units_default_to_the_last_dim(device: Device, rng: np.random.Generator, name: str) -> None:
    x = random_array(rng, (3, 2, 4), DType.F64)
    result = getattr(activation, name)(make(x, device))
    check(result, ALONG_DIM[name](x, -1), DType.F64)
    assert result.dims() == [3, 2, 2]


def test_glu_gates_the_first_half_with_the_second(device: Device) -> None:
    x = make(np.array([[2.0, -3.0, 0.0, 1e9]]), device)
    check(activation.glu(x, 1), [[1.0, -3.0]], DType.F64)
    check(activation.swiglu(x, 1), [[0.0, -3e9]], DType.F64)


@pytest.mark.parametrize("dtype", WIDE_FLOATS, ids=str)
def test_quiet_softmax_rows_sum_to_less_than_one(
    device: Device, rng: np.random.Generator, dtype: DType
) -> None:
    x = random_array(rng, (5, 6), dtype, -3.0, 3.0)
    result = activation.quiet_softmax(make(x, device), 1).to_numpy().astype(np.float64)
    sums = result.sum(axis=1)
    assert (sums < 1.0).all()
    assert (sums > 0.0).all()
    # the implicit zero logit takes exactly the rest
    expected_rest = 1.0 / (1.0 + np.exp(x.astype(np.float64)).sum(axis=1))
    np.testing.assert_allclose(1.0 - sums, expected_rest, rtol=1e-4 if dtype is DType.F32 else 1e-10)


def test_quiet_softmax_attends_to_nothing_when_every_logit_is_very_negative(device: Device) -> None:
    x = make(np.array([[-1000.0, -2000.0, -1e30], [1000.0, 1000.0, -1e30]]), device)
    result = activation.quiet_softmax(x, -1)
    check(result, [[0.0, 0.0, 0.0], [0.5, 0.5, 0.0]], DType.F64)


@pytest.mark.parametrize("dtype", WIDE_FLOATS, ids=str)
def test_softmax_rows_sum_to_one(device: Device, rng: np.random.Generator, dtype: DType) -> None:
    x = random_array(rng, (4, 7), dtype, -30.0, 30.0)
    for dim in (0, 1):
        sums = activation.softmax(make(x, device), dim).sum_dim(dim).to_numpy().astype(np.float64)
        np.testing.assert_allclose(sums, 1.0, rtol=1e-5 if dtype is DType.F32 else 1e-12)
        log_sums = np.exp(activation.log_softmax(make(x, device), dim).to_numpy().astype(np.float64))
        np.testing.assert_allclose(log_sums.sum(axis=dim), 1.0, rtol=1e-5 if dtype is DType.F32 else 1e-12)


def test_softmin_is_softmax_of_the_negation(device: Device, rng: np.random.Generator) -> None:
    x = make(random_array(rng, (3, 5), DType.F64), device)
    check(activation.softmin(x, 1), activation.softmax(-x, 1).to_numpy(), DType.F64)


# -- gelu -------------------------------------------------------------------------------------------
def test_gelu_tanh_approximates_gelu(device: Device) -> None:
    x = make(np.linspace(-6.0, 6.0, 121), device)
    exact = activation.gelu(x).to_numpy()
    approximate = activation.gelu(x, approximate="tanh").to_numpy()
    assert np.abs(exact - approximate).max() < 1e-3
    assert np.abs(exact - approximate).max() > 1e-6  # two different functions


def test_gelu_tanh_does_not_overflow_on_large_values(device: Device) -> None:
    require_dtype(device, DType.F16)
    x = np.array([-6e4, -300.0, 300.0, 6e4], dtype=np.float16)
    check(activation.gelu_tanh(make(x, device)), [0.0, 0.0, 300.0, 6e4], DType.F16)


def test_gelu_rejects_an_unknown_approximation(device: Device) -> None:
    with pytest.raises(ValueError, match=r"^gelu: approximate must be 'none' or 'tanh', got 'fast'"):
        activation.gelu(make(np.zeros(2), device), approximate="fast")  # type: ignore[arg-type]


# -- prelu and rrelu --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", WIDE_FLOATS + LOW_FLOATS, ids=str)
@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 3, 4), (2, 3, 2, 2)], ids=str)
@pytest.mark.parametrize("slopes", ["number", "one", "channels"])
def test_prelu(
    device: Device, rng: np.random.Generator, slopes: str, shape: tuple[int, ...], dtype: DType
) -> None:
    require_dtype(device, dtype)
    if slopes == "channels" and len(shape) < 2:
        pytest.skip("one slope per channel needs a channel dim")
    x = random_array(rng, shape, dtype, -4.0, 4.0)
    if slopes == "number":
        alpha: Any = 0.25
        broadcast: Any = np.float64(0.25)
    else:
        values = random_array(rng, (1 if slopes == "one" else shape[1],), dtype, -1.0, 1.0)
        alpha = make(values, device)
        broadcast = values.reshape([1, -1] + [1] * (len(shape) - 2)) if slopes == "channels" else values
    check(activation.prelu(make(x, device), alpha), ref.prelu(x, broadcast), dtype)


@pytest.mark.parametrize(
    ("alpha", "error", "match"),
    [
        (np.zeros(2), ValueError, r"^prelu: alpha of 2 slopes for a tensor of shape \[2, 3, 4\]"),
        (np.zeros((1, 3)), ValueError, r"^prelu: alpha must be 1-d, got shape \[1, 3\]"),
        (np.zeros(3, dtype=np.float32), TypeError, r"^prelu: dtypes differ"),
        (np.zeros(3, dtype=np.int64), TypeError, r"^prelu: expected a Float tensor, got an Int"),
        ("0.1", TypeError, r"^prelu: alpha must be a number, got '0.1'"),
    ],
    ids=["count", "rank", "dtype", "kind", "string"],
)
def test_prelu_rejects_bad_slopes(device: Device, alpha: Any, error: type[Exception], match: str) -> None:
    x = make(np.zeros((2, 3, 4)), device)
    with pytest.raises(error, match=match):
        activation.prelu(x, make(alpha, device) if isinstance(alpha, np.ndarray) else alpha)


def test_prelu_needs_channels_for_many_slopes(device: Device) -> None:
    with pytest.raises(ValueError, match=r"^prelu: alpha of 3 slopes for a tensor of shape \[3\]"):
        activation.prelu(make(np.zeros(3), device), make(np.ones(3), device))


def test_rrelu_in_training_draws_slopes_between_the_bounds(device: Device, rng: np.random.Generator) -> None:
    device.seed(7)
    values = -random_array(rng, (40, 50), DType.F64, 0.5, 2.0)
    values[0] = -values[0]
    result = activation.rrelu(make(values, device), 0.1, 0.3, training=True).to_numpy()
    np.testing.assert_array_equal(result[0], values[0])
    slopes = result[1:] / values[1:]
    assert slopes.min() >= 0.1
    assert slopes.max() <= 0.3
    assert slopes.std() > 0.03  # one slope per element, not one for all
    assert abs(slopes.mean() - 0.2) < 0.01


def test_rrelu_with_equal_bounds_is_leaky_relu(device: Device, rng: np.random.Generator) -> None:
    x = random_array(rng, (3, 4), DType.F64)
    result = activation.rrelu(make(x, device), 0.2, 0.2, training=True)
    check(result, ref.leaky_relu(x, 0.2), DType.F64)


# -- parameters -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "kwargs", "error", "match"),
    [
        ("leaky_relu", {"negative_slope": "a"}, TypeError, r"^leaky_relu: negative_slope must be a number"),
        ("leaky_relu", {"negative_slope": True}, TypeError, r"^leaky_relu: negative_slope must be a number"),
        (
            "leaky_relu",
            {"negative_slope": float("nan")},
            ValueError,
            r"^leaky_relu: negative_slope must not be NaN",
        ),
        ("softplus", {"beta": 0.0}, ValueError, r"^softplus: beta must be positive, got 0.0"),
        ("softplus", {"beta": -1.0}, ValueError, r"^softplus: beta must be positive, got -1.0"),
        ("softplus", {"threshold": None}, TypeError, r"^softplus: threshold must be a number, got None"),
        ("celu", {"alpha": 0.0}, ValueError, r"^celu: alpha must be positive, got 0.0"),
        ("elu", {"alpha": "1"}, TypeError, r"^elu: alpha must be a number, got '1'"),
        (
            "hardtanh",
            {"min_val": 1.0, "max_val": 0.0},
            ValueError,
            r"^hardtanh: min_val 1.0 is above max_val 0.0",
        ),
        ("hard_shrink", {"lambd": -0.5}, ValueError, r"^hard_shrink: lambd must be non-negative, got -0.5"),
        ("soft_shrink", {"lambd": -1}, ValueError, r"^soft_shrink: lambd must be non-negative, got -1"),
        ("shrink", {"lambd": -1.0}, ValueError, r"^shrink: lambd must be non-negative"),
        ("shrink", {"bias": [1.0]}, TypeError, r"^shrink: bias must be a number"),
        ("rrelu", {"lower": 0.5, "upper": 0.1}, ValueError, r"^rrelu: lower 0.5 is above upper 0.1"),
        ("hard_sigmoid", {"alpha": None}, TypeError, r"^hard_sigmoid: alpha must be a number, got None"),
        ("threshold", {"threshold": 0.0, "value": "x"}, TypeError, r"^threshold: value must be a number"),
        (
            "thresholded_relu",
            {"alpha": complex(1, 1)},
            TypeError,
            r"^thresholded_relu: alpha must be a number",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) and value.isidentifier() else None,
)
def test_function_rejects_bad_parameters(
    device: Device, name: str, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    x = make(np.zeros((2, 3)), device)
    with pytest.raises(error, match=match):
        getattr(activation, name)(x, **kwargs)


def test_parameters_accept_ints_and_numpy_numbers(device: Device) -> None:
    x = make(np.array([-2.0, 0.25, 2.0]), device)
    check(activation.leaky_relu(x, 1), [-2.0, 0.25, 2.0], DType.F64)
    check(activation.hardtanh(x, np.float32(-1), np.int64(1)), [-1.0, 0.25, 1.0], DType.F64)


# -- dispatch ---------------------------------------------------------------------------------------
DISPATCH = [
    ("relu", (), "relu"),
    ("leaky_relu", (0.1,), "leaky_relu"),
    ("rrelu", (), "leaky_relu"),
    ("prelu", (0.1,), "prelu"),
    ("gelu", (), "gelu"),
    ("sigmoid", (), "sigmoid"),
    ("silu", (), "sigmoid"),
    ("glu", (), "sigmoid"),
    ("hard_sigmoid", (), "hard_sigmoid"),
    ("hard_swish", (), "hard_sigmoid"),
    ("log_sigmoid", (), "log_sigmoid"),
    ("softmax", (1,), "softmax"),
    ("log_softmax", (1,), "log_softmax"),
    ("softmin", (1,), "softmin"),
]


@pytest.mark.parametrize(("name", "args", "op"), DISPATCH, ids=[name for name, _, _ in DISPATCH])
def test_function_calls_the_backend_kernel(device: Device, name: str, args: tuple[Any, ...], op: str) -> None:
    counts = _spy.calls(device.backend)
    before = counts[op]
    getattr(activation, name)(make(np.ones((2, 4)), device), *args)
    assert counts[op] == before + 1, f"{name} did not call the backend's {op}"


def test_functions_leave_their_input_unchanged(device: Device, rng: np.random.Generator) -> None:
    values = random_array(rng, (2, 4), DType.F32, -3.0, 3.0)
    x = make(values, device)
    for case in ELEMENTWISE:
        case(x)
    for name in ALONG_DIM:
        getattr(activation, name)(x, 1)
    np.testing.assert_array_equal(x.to_numpy(), values)


def test_every_public_function_is_documented_and_typed() -> None:
    for name in activation.__all__:
        function = getattr(activation, name)
        assert inspect.isfunction(function), name
        assert len(function.__doc__ or "") > 10, f"{name} has no docstring"
        signature = inspect.signature(function)
        assert signature.return_annotation != inspect.Signature.empty, f"{name} has no return type"
        for parameter in signature.parameters.values():
            assert parameter.annotation != inspect.Parameter.empty, f"{name}({parameter.name}) has no type"


# -- a second opinion: PyTorch in float64 -----------------------------------------------------------
def torch_functions() -> dict[str, tuple[Callable[[Tensor], Tensor], Callable[[Any], Any]]]:
    """Our function and PyTorch's, by name (PyTorch's applied to a float64 torch tensor)."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    a = activation
    return {
        "relu": (a.relu, F.relu),
        "relu6": (a.relu6, F.relu6),
        "leaky_relu": (lambda x: a.leaky_relu(x, 0.2), lambda t: F.leaky_relu(t, 0.2)),
        "prelu": (lambda x: a.prelu(x, 0.3), lambda t: F.prelu(t, torch.tensor([0.3], dtype=t.dtype))),
        "rrelu": (lambda x: a.rrelu(x, 0.1, 0.4), lambda t: F.rrelu(t, 0.1, 0.4, training=False)),
        "gelu": (a.gelu, F.gelu),
        "gelu_tanh": (a.gelu_tanh, lambda t: F.gelu(t, approximate="tanh")),
        "sigmoid": (a.sigmoid, torch.sigmoid),
        "silu": (a.silu, F.silu),
        "hard_sigmoid": (lambda x: a.hard_sigmoid(x, 1 / 6, 0.5), F.hardsigmoid),
        "hard_swish": (a.hard_swish, F.hardswish),
        "log_sigmoid": (a.log_sigmoid, F.logsigmoid),
        "softmax": (lambda x: a.softmax(x, 1), lambda t: F.softmax(t, 1)),
        "log_softmax": (lambda x: a.log_softmax(x, 0), lambda t: F.log_softmax(t, 0)),
        "softmin": (lambda x: a.softmin(x, -1), lambda t: F.softmin(t, -1)),
        "softplus": (lambda x: a.softplus(x, 1.5, 10.0), lambda t: F.softplus(t, 1.5, 10.0)),
        "softsign": (a.softsign, F.softsign),
        "mish": (a.mish, F.mish),
        "tanh": (a.tanh, torch.tanh),
        "tanhshrink": (a.tanhshrink, F.tanhshrink),
        "hardtanh": (lambda x: a.hardtanh(x, -2.0, 3.0), lambda t: F.hardtanh(t, -2.0, 3.0)),
        "elu": (lambda x: a.elu(x, 0.7), lambda t: F.elu(t, 0.7)),
        "selu": (a.selu, F.selu),
        "celu": (lambda x: a.celu(x, 1.5), lambda t: F.celu(t, 1.5)),
        "glu": (lambda x: a.glu(x, 0), lambda t: F.glu(t, 0)),
        "threshold": (lambda x: a.threshold(x, 0.5, -1.0), lambda t: F.threshold(t, 0.5, -1.0)),
        "hard_shrink": (lambda x: a.hard_shrink(x, 0.75), lambda t: F.hardshrink(t, 0.75)),
        "soft_shrink": (lambda x: a.soft_shrink(x, 0.75), lambda t: F.softshrink(t, 0.75)),
    }


TORCH_NAMES = [
    "relu", "relu6", "leaky_relu", "prelu", "rrelu", "gelu", "gelu_tanh", "sigmoid", "silu", "hard_sigmoid",
    "hard_swish", "log_sigmoid", "softmax", "log_softmax", "softmin", "softplus", "softsign", "mish", "tanh",
    "tanhshrink", "hardtanh", "elu", "selu", "celu", "glu", "threshold", "hard_shrink", "soft_shrink",
]  # fmt: skip


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_function_matches_torch(device: Device, rng: np.random.Generator, name: str) -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = torch_functions()[name]
    x = inputs(rng, DType.F64)
    expected = theirs(torch.tensor(x)).numpy()
    check(ours(make(x, device)), expected, DType.F64)
