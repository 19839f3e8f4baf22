"""Optimizer updates: ``burn_backend.optim.adam_step`` (``Backend.float_adam_step``) against Adam's and
AdamW's formulas in PyTorch's arrangement, and ``sgd_step`` (``Backend.float_sgd_step``) against
``torch.optim.SGD``'s, computed in float64, and their errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from burn_backend import AdamOptions, Device, DType, OptimizerOps, SgdOptions, Tensor, Tolerance
from burn_backend.optim import adam_step, sgd_step
from burn_backend.testing import check, make, random_array, require_dtype

Array = np.ndarray[Any, Any]
SHAPES = ((3, 4), (7,), (2, 3, 5))
SETTINGS = {
    "first": AdamOptions(lr=0.01, beta_1=0.9, beta_2=0.999, epsilon=1e-8, time=1),
    "later": AdamOptions(lr=0.01, beta_1=0.8, beta_2=0.99, epsilon=1e-5, time=5),
    "l2": AdamOptions(lr=0.02, beta_1=0.9, beta_2=0.999, epsilon=1e-8, time=3, weight_decay=0.1),
    "adamw": AdamOptions(
        lr=0.02, beta_1=0.9, beta_2=0.999, epsilon=1e-8, time=2, weight_decay=0.5, decoupled=True
    ),
}


def reference(
    p: Array, g: Array, m: Array | None, v: Array | None, options: AdamOptions
) -> tuple[Array, Array, Array]:
    """PyTorch's Adam / AdamW update in float64."""
    p, g = p.astype(np.float64), g.astype(np.float64)
    m = None if m is None else m.astype(np.float64)
    v = None if v is None else v.astype(np.float64)
    if options.weight_decay and not options.decoupled:
        g = g + options.weight_decay * p
    m = (1 - options.beta_1) * g if m is None else options.beta_1 * m + (1 - options.beta_1) * g
    v = (1 - options.beta_2) * g * g if v is None else options.beta_2 * v + (1 - options.beta_2) * g * g
    correction_1 = 1 - options.beta_1**options.time
    correction_2 = 1 - options.beta_2**options.time
    if options.decoupled:
        p = p * (1 - options.lr * options.weight_decay)
    step = options.lr / correction_1 * m / (np.sqrt(v) / math.sqrt(correction_2) + options.epsilon)
    return p - step, m, v


@pytest.mark.parametrize("dtype", [DType.F32, DType.F64, DType.F16], ids=str)
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_adam_step_follows_the_formula(
    device: Device, rng: np.random.Generator, dtype: DType, setting: str
) -> None:
    require_dtype(device, dtype)
    options = SETTINGS[setting]
    first = options.time == 1
    params = [random_array(rng, shape, dtype) for shape in SHAPES]
    grads = [random_array(rng, shape, dtype) for shape in SHAPES]
    moments_1 = [None if first else random_array(rng, shape, dtype, -0.5, 0.5) for shape in SHAPES]
    moments_2 = [None if first else random_array(rng, shape, dtype, 0.5, 2.0) for shape in SHAPES]

    def tensors(arrays: list[Any]) -> list[Any]:
        return [None if a is None else make(a, device) for a in arrays]

    new, new_1, new_2 = adam_step(
        tensors(params), tensors(grads), tensors(moments_1), tensors(moments_2), options
    )
    assert len(new) == len(new_1) == len(new_2) == len(SHAPES)
    for i in range(len(SHAPES)):
        m, v = moments_1[i], moments_2[i]
        want_p, want_m, want_v = reference(params[i], grads[i], m, v, options)
        # the update divides by sqrt(v) + epsilon: its rounding grows with m / sqrt(v) (below ~10 here)
        check(new[i], want_p, dtype, scale=4.0)
        check(new_1[i], want_m, dtype, scale=2.0)
        check(new_2[i], want_v, dtype, scale=2.0)


def test_adam_step_of_no_tensor_is_empty(device: Device) -> None:
    options = SETTINGS["first"]
    assert adam_step([], [], [], [], options) == ([], [], [])


def test_adam_step_leaves_its_inputs(device: Device) -> None:
    p = np.array([1.0, -2.0, 3.0], np.float32)
    g = np.array([0.5, 0.5, -1.0], np.float32)
    tensor, grad = make(p, device), make(g, device)
    adam_step([tensor], [grad], [None], [None], SETTINGS["later"])
    np.testing.assert_array_equal(tensor.to_numpy(), p)
    np.testing.assert_array_equal(grad.to_numpy(), g)


def test_adam_step_checks_its_operands(device: Device) -> None:
    options = SETTINGS["first"]
    p = Tensor.from_data([[1.0, 2.0]], device, DType.F32)
    g = Tensor.from_data([[0.1, 0.2]], device, DType.F32)
    with pytest.raises(ValueError, match="adam_step: expected one gradient and two moments per tensor"):
        adam_step([p], [], [None], [None], options)
    with pytest.raises(ValueError, match=r"adam_step: the gradient of tensor 0 is \[2, 1\] f32"):
        adam_step([p], [g.reshape([2, 1])], [None], [None], options)
    with pytest.raises(ValueError, match=r"adam_step: the first moment of tensor 0 is .* f64"):
        adam_step([p], [g], [Tensor.from_data([[0.0, 0.0]], device, DType.F64)], [None], options)
    with pytest.raises(ValueError, match="adam_step: every tensor must be on one device with one dtype"):
        adam_step([p, p.cast(DType.F64)], [g, g.cast(DType.F64)], [None, None], [None, None], options)
    with pytest.raises(TypeError, match="adam_step: tensor 0 must be a Float tensor, got a i64 tensor"):
        adam_step([Tensor.from_data([1, 2], device, DType.I64)], [g], [None], [None], options)
    with pytest.raises(TypeError, match="adam_step: expected AdamOptions, got dict"):
        adam_step([p], [g], [None], [None], {"lr": 0.1})  # type: ignore[arg-type]


def test_adam_options_check_their_values() -> None:
    with pytest.raises(ValueError, match="AdamOptions: time is the step number, from 1; got 0"):
        AdamOptions(lr=0.1, beta_1=0.9, beta_2=0.999, epsilon=1e-8, time=0)
    with pytest.raises(ValueError, match=r"AdamOptions: beta_2 must be in \[0, 1\), got 1.0"):
        AdamOptions(lr=0.1, beta_1=0.9, beta_2=1.0, epsilon=1e-8, time=1)


SGD_SETTINGS = {
    "plain": SgdOptions(lr=0.1),
    "decay": SgdOptions(lr=0.05, weight_decay=0.01),
    "momentum": SgdOptions(lr=0.1, momentum=0.9),
    "dampened": SgdOptions(lr=0.1, momentum=0.8, dampening=0.3, weight_decay=0.02),
    "nesterov": SgdOptions(lr=0.2, momentum=0.9, nesterov=True, weight_decay=0.1),
}


def sgd_reference(p: Array, g: Array, v: Array | None, options: SgdOptions) -> tuple[Array, Array | None]:
    """``torch.optim.SGD``'s update in float64 (with its dampening, which PyTorch forbids with
    Nesterov and this allows)."""
    p, g = p.astype(np.float64), g.astype(np.float64)
    if options.weight_decay:
        g = g + options.weight_decay * p
    if not options.momentum:
        return p - options.lr * g, None
    v = g if v is None else options.momentum * v.astype(np.float64) + (1 - options.dampening) * g
    direction = g + options.momentum * v if options.nesterov else v
    return p - options.lr * direction, v


@pytest.mark.parametrize("dtype", [DType.F32, DType.F64, DType.F16], ids=str)
@pytest.mark.parametrize("setting", sorted(SGD_SETTINGS))
def test_sgd_step_follows_the_formula(
    device: Device, rng: np.random.Generator, dtype: DType, setting: str
) -> None:
    require_dtype(device, dtype)
    options = SGD_SETTINGS[setting]
    params = [random_array(rng, shape, dtype) for shape in SHAPES]
    grads = [random_array(rng, shape, dtype) for shape in SHAPES]
    # the first tensor at its first step (no velocity yet), the others later
    velocities = [None] + [random_array(rng, shape, dtype) for shape in SHAPES[1:]]
    tensors = [make(a, device) for a in params]
    new, new_velocities = sgd_step(
        tensors,
        [make(a, device) for a in grads],
        [None if v is None else make(v, device) for v in velocities],
        options,
    )
    assert len(new) == len(new_velocities) == len(SHAPES)
    for i in range(len(SHAPES)):
        want_p, want_v = sgd_reference(params[i], grads[i], velocities[i], options)
        # a few roundings in the tensor's dtype of values up to about 2, in sums that may cancel: an
        # absolute bound of a few ulps at 2 (an f16 ulp there is 2e-3)
        bound = 8 * float(np.finfo(dtype.numpy).eps)
        check(new[i], want_p, dtype, Tolerance(relative=bound, absolute=bound))
        if want_v is None:
            assert new_velocities[i] is None
        else:
            velocity = new_velocities[i]
            assert velocity is not None
            check(velocity, want_v, dtype, Tolerance(relative=bound, absolute=bound))


@pytest.mark.parametrize("setting", sorted(SGD_SETTINGS))
def test_sgd_step_equals_the_composed_update_bit_for_bit(
    device: Device, rng: np.random.Generator, setting: str
) -> None:
    """A backend's kernel rounds each operation as the interface's default (one op at a time) does."""
    options = SGD_SETTINGS[setting]
    backend = device.backend
    arrays = [[random_array(rng, shape, DType.F32) for shape in SHAPES] for _ in range(3)]
    params, grads, velocities = ([make(a, device).primitive for a in group] for group in arrays)
    velocities[0] = None
    fast = backend.float_sgd_step(params, grads, velocities, options)
    composed = OptimizerOps.float_sgd_step(backend, params, grads, velocities, options)
    for got, want in zip(fast[0] + fast[1], composed[0] + composed[1], strict=True):
        if want is None:
            assert got is None
            continue
        np.testing.assert_array_equal(
            Tensor.from_primitive(got, device).to_numpy(), Tensor.from_primitive(want, device).to_numpy()
        )


def test_sgd_step_checks_its_operands(device: Device) -> None:
    options = SGD_SETTINGS["momentum"]
    p = Tensor.from_data([[1.0, 2.0]], device, DType.F32)
    g = Tensor.from_data([[0.1, 0.2]], device, DType.F32)
    assert sgd_step([], [], [], options) == ([], [])
    with pytest.raises(ValueError, match="sgd_step: expected one gradient and one velocity"):
        sgd_step([p], [g], [], options)
    with pytest.raises(ValueError, match=r"sgd_step: the velocity of tensor 0 is \[2, 1\] f32"):
        sgd_step([p], [g], [g.reshape([2, 1])], options)
    with pytest.raises(TypeError, match="sgd_step: expected SgdOptions, got AdamOptions"):
        sgd_step([p], [g], [None], SETTINGS["first"])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"SgdOptions: dampening must be in \[0, 1\], got 1.5"):
        SgdOptions(lr=0.1, momentum=0.9, dampening=1.5)
