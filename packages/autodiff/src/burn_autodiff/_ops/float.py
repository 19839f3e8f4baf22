"""The differentiable float ops of Autodiff: forward on the inner backend, a backward for each."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from burn_backend import Backend, DType, IndexingUpdateOp, ReduceOperation, TensorData

from .._graph import AutodiffTensor, OpSpec, leaf
from ._common import Recorder, reduce_to, shape_of, zeros_like

P = Any
T = AutodiffTensor
Grads = Sequence[P | None]


def _unary_spec(name: str, derivative: Callable[[Backend, P, P], P], uses_output: bool) -> OpSpec:
    """An element-wise op whose gradient is ``grad * derivative(inner, x_or_output)``."""

    def forward(b: Backend, xs: Sequence[Any], args: Any) -> P:
        return getattr(b, f"float_{name}")(xs[0])

    def backward(b: Backend, g: P, xs: Sequence[Any], out: Any, args: Any) -> Grads:
        return (b.float_mul(g, derivative(b, out if uses_output else xs[0], g)),)

    keeps: tuple[int, ...] = () if uses_output else (0,)
    return OpSpec(name, backward, forward, keeps_inputs=keeps, keeps_output=uses_output)


def _one_minus_square(b: Backend, y: P) -> P:
    return b.float_add_scalar(b.float_neg(b.float_mul(y, y)), 1.0)


def _zero_grad(b: Backend, x: P, g: P) -> P:
    return zeros_like(b, g)


_UNARY: dict[str, tuple[Callable[[Backend, P, P], P], bool]] = {
    "exp": (lambda b, y, g: y, True),
    "log": (lambda b, x, g: b.float_recip(x), False),
    "log1p": (lambda b, x, g: b.float_recip(b.float_add_scalar(x, 1.0)), False),
    "sqrt": (lambda b, y, g: b.float_div_scalar(b.float_recip(y), 2.0), True),
    "abs": (lambda b, x, g: b.float_sign(x), False),
    "cos": (lambda b, x, g: b.float_neg(b.float_sin(x)), False),
    "sin": (lambda b, x, g: b.float_cos(x), False),
    "tan": (lambda b, y, g: b.float_add_scalar(b.float_mul(y, y), 1.0), True),
    "cosh": (lambda b, x, g: b.float_sinh(x), False),
    "sinh": (lambda b, x, g: b.float_cosh(x), False),
    "tanh": (lambda b, y, g: _one_minus_square(b, y), True),
    "acos": (lambda b, x, g: b.float_neg(b.float_recip(b.float_sqrt(_one_minus_square(b, x)))), False),
    "asin": (lambda b, x, g: b.float_recip(b.float_sqrt(_one_minus_square(b, x))), False),
    "acosh": (lambda b, x, g: b.float_recip(b.float_sqrt(b.float_sub_scalar(b.float_mul(x, x), 1.0))), False),
    "asinh": (lambda b, x, g: b.float_recip(b.float_sqrt(b.float_add_scalar(b.float_mul(x, x), 1.0))), False),
    "atan": (lambda b, x, g: b.float_recip(b.float_add_scalar(b.float_mul(x, x), 1.0)), False),
    "atanh": (lambda b, x, g: b.float_recip(_one_minus_square(b, x)), False),
    "erf": (
        lambda b, x, g: b.float_mul_scalar(
            b.float_exp(b.float_neg(b.float_mul(x, x))), 2.0 / math.sqrt(math.pi)
        ),
        False,
    ),
    "erfinv": (  # d/dy erfinv(y) = sqrt(pi) / 2 * exp(erfinv(y)^2), from the output
        lambda b, y, g: b.float_mul_scalar(b.float_exp(b.float_mul(y, y)), math.sqrt(math.pi) / 2),
        True,
    ),
    "recip": (lambda b, y, g: b.float_neg(b.float_mul(y, y)), True),
    "round": (_zero_grad, False),
    "floor": (_zero_grad, False),
    "ceil": (_zero_grad, False),
    "trunc": (_zero_grad, False),
    "sign": (_zero_grad, False),
}
_UNARY_SPECS = {name: _unary_spec(name, derivative, uses) for name, (derivative, uses) in _UNARY.items()}


def _unary_method(name: str) -> Callable[[Any, T], T]:
    spec = _UNARY_SPECS[name]
    method_name = f"float_{name}"

    def method(self: Any, tensor: T) -> T:
        return self.track(spec, (tensor,), getattr(self._inner, method_name)(tensor.primitive))  # type: ignore[no-any-return]

    method.__name__ = method.__qualname__ = method_name
    method.__doc__ = f"``{name}`` with its gradient."
    return method


def _binary_spec(
    name: str,
    backward: Callable[[Backend, P, P, P, P | None], tuple[P, P]],
    keeps_output: bool = False,
    keeps_inputs: tuple[int, ...] = (0, 1),
) -> OpSpec:
    def forward(b: Backend, xs: Sequence[Any], args: Any) -> P:
        return getattr(b, f"float_{name}")(xs[0], xs[1])

    def full_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, args: Any) -> Grads:
        lhs_shape, rhs_shape = args
        grad_lhs, grad_rhs = backward(b, g, xs[0], xs[1], out)
        return (
            None if grad_lhs is None else reduce_to(b, grad_lhs, lhs_shape),
            None if grad_rhs is None else reduce_to(b, grad_rhs, rhs_shape),
        )

    return OpSpec(name, full_backward, forward, keeps_inputs=keeps_inputs, keeps_output=keeps_output)


_BINARY = {
    "add": _binary_spec("add", lambda b, g, x, y, o: (g, g), keeps_inputs=()),
    "sub": _binary_spec("sub", lambda b, g, x, y, o: (g, b.float_neg(g)), keeps_inputs=()),
    "mul": _binary_spec("mul", lambda b, g, x, y, o: (b.float_mul(g, y), b.float_mul(g, x))),
    "div": _binary_spec(
        "div",
        lambda b, g, x, y, o: (
            b.float_div(g, y),
            b.float_neg(b.float_div(b.float_mul(g, x), b.float_mul(y, y))),
        ),
    ),
    "remainder": _binary_spec(
        "remainder", lambda b, g, x, y, o: (g, b.float_neg(b.float_mul(g, b.float_floor(b.float_div(x, y)))))
    ),
    "powf": _binary_spec("powf", lambda b, g, x, y, o: _powf_backward(b, g, x, y, o), keeps_output=True),
    "hypot": _binary_spec(
        "hypot",
        lambda b, g, x, y, o: (b.float_mul(g, b.float_div(x, o)), b.float_mul(g, b.float_div(y, o))),
        keeps_output=True,
    ),
    "atan2": _binary_spec(
        "atan2",
        lambda b, g, y, x, o: (
            b.float_mul(g, b.float_div(x, b.float_add(b.float_mul(x, x), b.float_mul(y, y)))),
            b.float_neg(b.float_mul(g, b.float_div(y, b.float_add(b.float_mul(x, x), b.float_mul(y, y))))),
        ),
    ),
}


def _powf_backward(b: Backend, g: P, x: P, y: P, out: P) -> tuple[P, P]:
    # where y == 0 the base's gradient is 0 (x ** (y - 1) would be inf at x = 0); where x == 0 the
    # exponent's gradient is 0 (out * log(x) would be 0 * -inf): both masked before computing, so that
    # no NaN or warning arises
    exponent = b.float_mask_fill(b.float_sub_scalar(y, 1.0), b.float_equal_elem(y, 0.0), 0.0)
    grad_x = b.float_mul(g, b.float_mul(y, b.float_powf(x, exponent)))
    safe_base = b.float_mask_fill(x, b.float_equal_elem(x, 0.0), 1.0)
    grad_y = b.float_mul(g, b.float_mul(out, b.float_log(safe_base)))
    return grad_x, grad_y


def _binary_method(name: str) -> Callable[[Any, T, T], T]:
    spec = _BINARY[name]
    method_name = f"float_{name}"

    def method(self: Any, lhs: T, rhs: T) -> T:
        output = getattr(self._inner, method_name)(lhs.primitive, rhs.primitive)
        return self.track(spec, (lhs, rhs), output, (shape_of(lhs), shape_of(rhs)))  # type: ignore[no-any-return]

    method.__name__ = method.__qualname__ = method_name
    method.__doc__ = f"``{name}`` with its gradient (broadcast dims summed back)."
    return method


def _scalar_spec(
    name: str, derivative: Callable[[Backend, P, P, float], P], keeps_input: bool = False
) -> OpSpec:
    def forward(b: Backend, xs: Sequence[Any], args: Any) -> P:
        return getattr(b, f"float_{name}")(xs[0], args)

    def backward(b: Backend, g: P, xs: Sequence[Any], out: Any, scalar: Any) -> Grads:
        return (derivative(b, g, xs[0], scalar),)

    return OpSpec(name, backward, forward, keeps_inputs=(0,) if keeps_input else ())


_SCALAR = {
    "add_scalar": _scalar_spec("add_scalar", lambda b, g, x, s: g),
    "sub_scalar": _scalar_spec("sub_scalar", lambda b, g, x, s: g),
    "mul_scalar": _scalar_spec("mul_scalar", lambda b, g, x, s: b.float_mul_scalar(g, s)),
    "div_scalar": _scalar_spec("div_scalar", lambda b, g, x, s: b.float_div_scalar(g, s)),
    "remainder_scalar": _scalar_spec("remainder_scalar", lambda b, g, x, s: g),
    "powf_scalar": _scalar_spec(
        "powf_scalar",
        # x ** 0 is constant: its gradient is 0 even at x = 0, where 0 * x ** -1 would be NaN
        lambda b, g, x, s: (
            zeros_like(b, g)
            if s == 0
            else b.float_mul(g, b.float_mul_scalar(b.float_powf_scalar(x, s - 1.0), s))
        ),
        keeps_input=True,
    ),
}


def _scalar_method(name: str, parameter: str) -> Callable[..., T]:
    spec = _SCALAR[name]
    method_name = f"float_{name}"

    def method(self: Any, lhs: T, rhs: float) -> T:
        return self.track(spec, (lhs,), getattr(self._inner, method_name)(lhs.primitive, rhs), rhs)  # type: ignore[no-any-return]

    def method_exponent(self: Any, tensor: T, exponent: float) -> T:
        output = getattr(self._inner, method_name)(tensor.primitive, exponent)
        return self.track(spec, (tensor,), output, exponent)  # type: ignore[no-any-return]

    chosen = method if parameter == "rhs" else method_exponent
    chosen.__name__ = chosen.__qualname__ = method_name
    chosen.__doc__ = f"``{name}`` with its gradient."
    return chosen


# -- specs of the structural ops ------------------------------------------------------------------
def _matmul_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, args: Any) -> Grads:
    lhs, rhs = xs
    lhs_shape, rhs_shape, lhs_tracked, rhs_tracked = args
    # a product per tracked operand only: the input of a first layer needs none
    grad_lhs = reduce_to(b, b.float_matmul(g, b.float_transpose(rhs)), lhs_shape) if lhs_tracked else None
    grad_rhs = reduce_to(b, b.float_matmul(b.float_transpose(lhs), g), rhs_shape) if rhs_tracked else None
    return grad_lhs, grad_rhs


_MATMUL = OpSpec("matmul", _matmul_backward, keeps_inputs=(0, 1))
_CROSS = OpSpec(
    "cross",
    lambda b, g, xs, out, a: (
        reduce_to(b, b.float_cross(xs[1], g, a[0]), a[1]),
        reduce_to(b, b.float_cross(g, xs[0], a[0]), a[2]),
    ),
    keeps_inputs=(0, 1),
)
_SWAP_DIMS = OpSpec(
    "swap_dims",
    lambda b, g, xs, out, a: (b.float_swap_dims(g, a[0], a[1]),),
    lambda b, xs, a: b.float_swap_dims(xs[0], *a),
)
_PERMUTE = OpSpec(
    "permute",
    lambda b, g, xs, out, a: (b.float_permute(g, tuple(sorted(range(len(a)), key=a.__getitem__))),),
    lambda b, xs, a: b.float_permute(xs[0], a),
)
_FLIP = OpSpec(
    "flip", lambda b, g, xs, out, a: (b.float_flip(g, a),), lambda b, xs, a: b.float_flip(xs[0], a)
)
_RESHAPE = OpSpec(
    "reshape",
    lambda b, g, xs, out, a: (b.float_reshape(g, a[0]),),
    lambda b, xs, a: b.float_reshape(xs[0], a[1]),
)
_EXPAND = OpSpec(
    "expand", lambda b, g, xs, out, a: (reduce_to(b, g, a[0]),), lambda b, xs, a: b.float_expand(xs[0], a[1])
)
_SUM = OpSpec(
    "sum", lambda b, g, xs, out, shape: (b.float_expand(b.float_reshape(g, (1,) * len(shape)), shape),)
)
_SUM_DIM = OpSpec("sum_dim", lambda b, g, xs, out, a: (b.float_expand(g, a[0]),))
_MEAN_DIM = OpSpec(
    "mean_dim",
    lambda b, g, xs, out, a: (b.float_expand(b.float_div_scalar(g, float(max(a[0][a[1]], 1))), a[0]),),
)
_CAST = OpSpec("cast", lambda b, g, xs, out, source: (b.float_cast(g, source),))
_TO_DEVICE = OpSpec("to_device", lambda b, g, xs, out, source: (b.float_to_device(g, source),))


def _all_reduce_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, a: Any) -> Grads:
    # output i = op(inputs): each input's gradient is this output's gradient (scaled for a mean) on the
    # input's device; the graph sums the contributions of every output, which makes the rule an
    # all-reduce of the outputs' gradients, as the forward was
    devices, scale = a
    if scale != 1.0:
        g = b.float_mul_scalar(g, scale)
    return tuple(b.float_to_device(g, device) for device in devices)


_ALL_REDUCE = OpSpec("all_reduce", _all_reduce_backward)
# across processes: every process runs its own backward, so the rule is the same collective over the
# output's gradient (the processes' backward passes meet in it, as their forward passes did)
_ALL_REDUCE_PROCESSES = OpSpec(
    "all_reduce_processes", lambda b, g, xs, out, a: (b.float_all_reduce_processes(g, *a),)
)


def _slice_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, a: Any) -> Grads:
    shape, slices, device, dtype = a
    return (b.float_slice_assign(b.float_zeros(shape, device, dtype), slices, g),)


_SLICE = OpSpec("slice", _slice_backward, lambda b, xs, a: b.float_slice(xs[0], a[1]))


def _slice_assign_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, a: Any) -> Grads:
    slices, value_shape, device, dtype = a
    return (
        b.float_slice_assign(g, slices, b.float_zeros(value_shape, device, dtype)),
        b.float_slice(g, slices),
    )


_SLICE_ASSIGN = OpSpec("slice_assign", _slice_assign_backward)


def _gather_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, a: Any) -> Grads:
    dim, shape, device, dtype = a
    return (b.float_scatter_add(b.float_zeros(shape, device, dtype), dim, xs[1], g), None)


_GATHER = OpSpec("gather", _gather_backward, keeps_inputs=(1,))
_SCATTER_ADD = OpSpec(
    "scatter_add", lambda b, g, xs, out, dim: (g, None, b.float_gather(g, dim, xs[1])), keeps_inputs=(1,)
)


def _select_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, a: Any) -> Grads:
    dim, shape, device, dtype = a
    return (b.float_select_add(b.float_zeros(shape, device, dtype), dim, xs[1], g), None)


_SELECT = OpSpec("select", _select_backward, keeps_inputs=(1,))
_SELECT_ADD = OpSpec(
    "select_add", lambda b, g, xs, out, dim: (g, None, b.float_select(g, dim, xs[1])), keeps_inputs=(1,)
)


def _mask_where_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, a: Any) -> Grads:
    tensor_shape, value_shape = a
    mask = xs[1]
    return (
        reduce_to(b, b.float_mask_fill(g, mask, 0.0), tensor_shape),
        None,
        reduce_to(b, b.float_mask_fill(g, b.bool_not(mask), 0.0), value_shape),
    )


_MASK_WHERE = OpSpec("mask_where", _mask_where_backward, keeps_inputs=(1,))
_MASK_FILL = OpSpec(
    "mask_fill",
    lambda b, g, xs, out, shape: (reduce_to(b, b.float_mask_fill(g, xs[1], 0.0), shape), None),
    keeps_inputs=(1,),
)


def _reverse_cumsum(b: Backend, g: P, dim: int) -> P:
    return b.float_flip(b.float_cumsum(b.float_flip(g, (dim,)), dim), (dim,))


_CUMSUM = OpSpec(
    "cumsum",
    lambda b, g, xs, out, dim: (_reverse_cumsum(b, g, dim),),
    lambda b, xs, dim: b.float_cumsum(xs[0], dim),
)


def _cumprod_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, dim: int) -> Grads:
    """d out_j / d x_i = prod_{k <= j, k != i} x_k, without reading values (no host synchronization).
    With z the first zero along ``dim`` (the end where there is none): before z the quotient form
    ``reverse_cumsum(g * out) / x`` holds (x != 0 there); at z the gradient is ``reverse_cumsum(g *
    cumprod(x with x_z = 1))``; after z every product that holds x_i also holds x_z = 0."""
    x = xs[0]
    zero = b.float_equal_elem(x, 0.0)
    zeros_so_far = b.int_cumsum(b.bool_into_int(zero, b.int_dtype), dim)
    before = b.int_equal_elem(zeros_so_far, 0)
    first = b.bool_and(zero, b.int_equal_elem(zeros_so_far, 1))
    divisor = b.float_mask_fill(x, b.bool_not(before), 1.0)
    quotient = b.float_div(_reverse_cumsum(b, b.float_mul(g, out), dim), divisor)
    skipping_first = b.float_cumprod(b.float_mask_fill(x, first, 1.0), dim)
    at_first = _reverse_cumsum(b, b.float_mul(g, skipping_first), dim)
    after = b.float_zeros(tuple(x.shape), b.float_device(x), DType.of(x.dtype))
    return (b.float_mask_where(b.float_mask_where(after, first, at_first), before, quotient),)


def _take(b: Backend, x: P, dim: int, start: int, stop: int) -> P:
    slices = [slice(0, s, 1) for s in x.shape]
    slices[dim] = slice(start, stop, 1)
    return b.float_slice(x, tuple(slices))


_CUMPROD = OpSpec("cumprod", _cumprod_backward, keeps_inputs=(0,), keeps_output=True)


def _running_extreme_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, dim: int) -> Grads:
    # the gradient of each running extreme goes to the last position that reached it
    x = xs[0]
    device = b.float_device(x)
    size = x.shape[dim]
    positions = b.int_reshape(
        b.int_arange(0, size, device, b.int_dtype),
        tuple(size if d == dim else 1 for d in range(len(x.shape))),
    )
    positions = b.int_expand(positions, tuple(x.shape))
    reached = b.float_equal(x, out)
    source = b.int_cummax(b.int_mask_fill(positions, b.bool_not(reached), 0), dim)
    return (b.float_scatter_add(zeros_like(b, x), dim, source, g),)


_CUMMIN = OpSpec("cummin", _running_extreme_backward, keeps_inputs=(0,), keeps_output=True)
_CUMMAX = OpSpec("cummax", _running_extreme_backward, keeps_inputs=(0,), keeps_output=True)


def _unfold_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, a: Any) -> Grads:
    dim, size, step, shape, device, dtype = a
    windows = g.shape[dim]
    grad = b.float_zeros(shape, device, dtype)
    last = len(g.shape) - 1
    for offset in range(size):
        piece = _take(b, g, last, offset, offset + 1)
        piece = b.float_reshape(piece, tuple(piece.shape[:-1]))
        rows = b.int_arange_step(offset, offset + step * windows, step, device, b.int_dtype)
        grad = b.float_select_add(grad, dim, rows, piece)
    return (grad,)


_UNFOLD = OpSpec("unfold", _unfold_backward, lambda b, xs, a: b.float_unfold(xs[0], a[0], a[1], a[2]))


def _scatter_nd_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, a: Any) -> Grads:
    update, value_shape, device, dtype = a
    indices = xs[1]
    if update is IndexingUpdateOp.ASSIGN:
        grad_tensor = b.float_scatter_nd(g, indices, b.float_zeros(value_shape, device, dtype), update)
    else:
        grad_tensor = g
    return grad_tensor, None, b.float_gather_nd(g, indices)


_SCATTER_ND = OpSpec("scatter_nd", _scatter_nd_backward, keeps_inputs=(1,))


def _scatter_assign_backward(b: Backend, g: P, xs: Sequence[Any], out: Any, a: Any) -> Grads:
    dim, value_shape, device, dtype = a
    indices = xs[1]
    cleared = b.float_scatter(
        g, dim, indices, b.float_zeros(value_shape, device, dtype), IndexingUpdateOp.ASSIGN
    )
    return cleared, None, b.float_gather(g, dim, indices)


_SCATTER_ASSIGN = OpSpec("scatter_assign", _scatter_assign_backward, keeps_inputs=(1,))


class FloatOps(Recorder):
    """Autodiff's float op group: the inner backend computes, every op records its backward."""

    float_exp = _unary_method("exp")
    float_log = _unary_method("log")
    float_log1p = _unary_method("log1p")
    float_sqrt = _unary_method("sqrt")
    float_abs = _unary_method("abs")
    float_cos = _unary_method("cos")
    float_sin = _unary_method("sin")
    float_tan = _unary_method("tan")
    float_cosh = _unary_method("cosh")
    float_sinh = _unary_method("sinh")
    float_tanh = _unary_method("tanh")
    float_acos = _unary_method("acos")
    float_acosh = _unary_method("acosh")
    float_asin = _unary_method("asin")
    float_asinh = _unary_method("asinh")
    float_atan = _unary_method("atan")
    float_atanh = _unary_method("atanh")
    float_erf = _unary_method("erf")
    float_erfinv = _unary_method("erfinv")
    float_recip = _unary_method("recip")
    float_round = _unary_method("round")
    float_floor = _unary_method("floor")
    float_ceil = _unary_method("ceil")
    float_trunc = _unary_method("trunc")
    float_sign = _unary_method("sign")

    float_add = _binary_method("add")
    float_sub = _binary_method("sub")
    float_mul = _binary_method("mul")
    float_div = _binary_method("div")
    float_remainder = _binary_method("remainder")
    float_powf = _binary_method("powf")
    float_atan2 = _binary_method("atan2")
    float_hypot = _binary_method("hypot")

    float_add_scalar = _scalar_method("add_scalar", "rhs")
    float_sub_scalar = _scalar_method("sub_scalar", "rhs")
    float_mul_scalar = _scalar_method("mul_scalar", "rhs")
    float_div_scalar = _scalar_method("div_scalar", "rhs")
    float_remainder_scalar = _scalar_method("remainder_scalar", "rhs")
    float_powf_scalar = _scalar_method("powf_scalar", "exponent")

    def float_matmul(self, lhs: T, rhs: T) -> T:
        output = self._inner.float_matmul(lhs.primitive, rhs.primitive)
        args = (shape_of(lhs), shape_of(rhs), lhs.node is not None, rhs.node is not None)
        return self.track(_MATMUL, (lhs, rhs), output, args)

    def float_cross(self, lhs: T, rhs: T, dim: int) -> T:
        output = self._inner.float_cross(lhs.primitive, rhs.primitive, dim)
        return self.track(_CROSS, (lhs, rhs), output, (dim, shape_of(lhs), shape_of(rhs)))

    def float_swap_dims(self, tensor: T, dim1: int, dim2: int) -> T:
        return self.track(
            _SWAP_DIMS, (tensor,), self._inner.float_swap_dims(tensor.primitive, dim1, dim2), (dim1, dim2)
        )

    def float_permute(self, tensor: T, axes: Sequence[int]) -> T:
        axes = tuple(axes)
        return self.track(_PERMUTE, (tensor,), self._inner.float_permute(tensor.primitive, axes), axes)

    def float_flip(self, tensor: T, axes: Sequence[int]) -> T:
        axes = tuple(axes)
        return self.track(_FLIP, (tensor,), self._inner.float_flip(tensor.primitive, axes), axes)

    def float_reshape(self, tensor: T, shape: tuple[int, ...]) -> T:
        output = self._inner.float_reshape(tensor.primitive, shape)
        return self.track(_RESHAPE, (tensor,), output, (shape_of(tensor), tuple(shape)))

    def float_expand(self, tensor: T, shape: tuple[int, ...]) -> T:
        output = self._inner.float_expand(tensor.primitive, shape)
        return self.track(_EXPAND, (tensor,), output, (shape_of(tensor), tuple(shape)))

    def float_unfold(self, tensor: T, dim: int, size: int, step: int) -> T:
        inner = self._inner
        output = inner.float_unfold(tensor.primitive, dim, size, step)
        device = inner.float_device(tensor.primitive)
        args = (dim, size, step, shape_of(tensor), device, DType.of(tensor.dtype))
        return self.track(_UNFOLD, (tensor,), output, args)

    def float_sum(self, tensor: T) -> T:
        return self.track(_SUM, (tensor,), self._inner.float_sum(tensor.primitive), shape_of(tensor))

    def float_sum_dim(self, tensor: T, dim: int) -> T:
        return self.track(
            _SUM_DIM, (tensor,), self._inner.float_sum_dim(tensor.primitive, dim), (shape_of(tensor), dim)
        )

    def float_mean_dim(self, tensor: T, dim: int) -> T:
        output = self._inner.float_mean_dim(tensor.primitive, dim)
        return self.track(_MEAN_DIM, (tensor,), output, (shape_of(tensor), dim))

    def float_cumsum(self, tensor: T, dim: int) -> T:
        return self.track(_CUMSUM, (tensor,), self._inner.float_cumsum(tensor.primitive, dim), dim)

    def float_cumprod(self, tensor: T, dim: int) -> T:
        return self.track(_CUMPROD, (tensor,), self._inner.float_cumprod(tensor.primitive, dim), dim)

    def float_cummin(self, tensor: T, dim: int) -> T:
        return self.track(_CUMMIN, (tensor,), self._inner.float_cummin(tensor.primitive, dim), dim)

    def float_cummax(self, tensor: T, dim: int) -> T:
        return self.track(_CUMMAX, (tensor,), self._inner.float_cummax(tensor.primitive, dim), dim)

    def float_cast(self, tensor: T, dtype: DType) -> T:
        output = self._inner.float_cast(tensor.primitive, dtype)
        return self.track(_CAST, (tensor,), output, DType.of(tensor.dtype))

    def float_slice(self, tensor: T, slices: Sequence[slice]) -> T:
        inner = self._inner
        slices = tuple(slices)
        args = (shape_of(tensor), slices, inner.float_device(tensor.primitive), DType.of(tensor.dtype))
        return self.track(_SLICE, (tensor,), inner.float_slice(tensor.primitive, slices), args)

    def float_slice_assign(self, tensor: T, slices: Sequence[slice], value: T) -> T:
        inner = self._inner
        slices = tuple(slices)
        output = inner.float_slice_assign(tensor.primitive, slices, value.primitive)
        args = (slices, shape_of(value), inner.float_device(tensor.primitive), DType.of(tensor.dtype))
        return self.track(_SLICE_ASSIGN, (tensor, value), output, args)

    def float_gather(self, tensor: T, dim: int, indices: P) -> T:
        inner = self._inner
        output = inner.float_gather(tensor.primitive, dim, indices)
        args = (dim, shape_of(tensor), inner.float_device(tensor.primitive), DType.of(tensor.dtype))
        return self.track(_GATHER, (tensor, indices), output, args)

    def float_scatter_add(self, tensor: T, dim: int, indices: P, values: T) -> T:
        output = self._inner.float_scatter_add(tensor.primitive, dim, indices, values.primitive)
        return self.track(_SCATTER_ADD, (tensor, indices, values), output, dim)

    def float_select(self, tensor: T, dim: int, indices: P) -> T:
        inner = self._inner
        output = inner.float_select(tensor.primitive, dim, indices)
        args = (dim, shape_of(tensor), inner.float_device(tensor.primitive), DType.of(tensor.dtype))
        return self.track(_SELECT, (tensor, indices), output, args)

    def float_select_add(self, tensor: T, dim: int, indices: P, values: T) -> T:
        output = self._inner.float_select_add(tensor.primitive, dim, indices, values.primitive)
        return self.track(_SELECT_ADD, (tensor, indices, values), output, dim)

    def float_mask_where(self, tensor: T, mask: P, value: T) -> T:
        output = self._inner.float_mask_where(tensor.primitive, mask, value.primitive)
        return self.track(_MASK_WHERE, (tensor, mask, value), output, (shape_of(tensor), shape_of(value)))

    def float_mask_fill(self, tensor: T, mask: P, value: float) -> T:
        output = self._inner.float_mask_fill(tensor.primitive, mask, value)
        return self.track(_MASK_FILL, (tensor, mask), output, shape_of(tensor))

    def float_scatter_nd(self, tensor: T, indices: P, values: T, update: IndexingUpdateOp) -> T:
        inner = self._inner
        output = inner.float_scatter_nd(tensor.primitive, indices, values.primitive, update)
        if update not in (IndexingUpdateOp.ASSIGN, IndexingUpdateOp.ADD) and (
            tensor.node is not None or values.node is not None
        ):
            raise NotImplementedError(
                f"scatter_nd: no gradient for the update {update.value!r} (assign and add have one)"
            )
        args = (update, shape_of(values), inner.float_device(tensor.primitive), DType.of(tensor.dtype))
        return self.track(_SCATTER_ND, (tensor, indices, values), output, args)

    def float_scatter(self, tensor: T, dim: int, indices: P, values: T, update: IndexingUpdateOp) -> T:
        if update is IndexingUpdateOp.ADD:
            return self.float_scatter_add(tensor, dim, indices, values)
        inner = self._inner
        output = inner.float_scatter(tensor.primitive, dim, indices, values.primitive, update)
        if update is not IndexingUpdateOp.ASSIGN:
            if tensor.node is not None or values.node is not None:
                raise NotImplementedError(
                    f"scatter: no gradient for the update {update.value!r} (assign and add have one)"
                )
            return AutodiffTensor(output)
        args = (dim, shape_of(values), inner.float_device(tensor.primitive), DType.of(tensor.dtype))
        return self.track(_SCATTER_ASSIGN, (tensor, indices, values), output, args)

    def float_sort_with_indices(self, tensor: T, dim: int, descending: bool) -> tuple[T, P]:
        indices = self._inner.float_argsort(tensor.primitive, dim, descending)
        return self.float_gather(tensor, dim, indices), indices

    def float_sort(self, tensor: T, dim: int, descending: bool) -> T:
        return self.float_sort_with_indices(tensor, dim, descending)[0]

    def float_topk_with_indices(self, tensor: T, dim: int, k: int) -> tuple[T, P]:
        indices = self._inner.float_argtopk(tensor.primitive, dim, k)
        return self.float_gather(tensor, dim, indices), indices

    def float_topk(self, tensor: T, dim: int, k: int) -> T:
        return self.float_topk_with_indices(tensor, dim, k)[0]

    def float_max_dim_with_indices(self, tensor: T, dim: int) -> tuple[T, P]:
        indices = self._inner.float_argmax(tensor.primitive, dim)
        return self.float_gather(tensor, dim, indices), indices

    def float_min_dim_with_indices(self, tensor: T, dim: int) -> tuple[T, P]:
        indices = self._inner.float_argmin(tensor.primitive, dim)
        return self.float_gather(tensor, dim, indices), indices

    def float_to_device(self, tensor: T, device: Any) -> T:
        inner = self._inner
        output = inner.float_to_device(tensor.primitive, self.inner_device(device))
        return self.track(_TO_DEVICE, (tensor,), output, inner.float_device(tensor.primitive))

    def float_all_reduce(self, tensors: Sequence[T], op: ReduceOperation) -> list[T]:
        inner = self._inner
        primitives = [t.primitive for t in tensors]
        outputs = inner.float_all_reduce(primitives, op)
        scale = 1.0 / len(tensors) if op is ReduceOperation.MEAN else 1.0
        devices = [inner.float_device(p) for p in primitives]
        return [self.track(_ALL_REDUCE, tuple(tensors), output, (devices, scale)) for output in outputs]

    def float_all_reduce_processes(self, tensor: T, op: ReduceOperation, group: Any) -> T:
        output = self._inner.float_all_reduce_processes(tensor.primitive, op, group)
        return self.track(_ALL_REDUCE_PROCESSES, (tensor,), output, (op, group))

    # -- creation and data: untracked -------------------------------------------------------------
    def float_from_data(self, data: TensorData, device: Any) -> T:
        return AutodiffTensor(self._inner.float_from_data(data, self.inner_device(device)))

    def float_detach(self, tensor: T) -> T:
        return AutodiffTensor(tensor.primitive)

    def float_set_require_grad(self, tensor: T, require_grad: bool) -> T:
        return leaf(tensor, require_grad)

    def float_is_require_grad(self, tensor: T) -> bool:
        return tensor.node is not None
