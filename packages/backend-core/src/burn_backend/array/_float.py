"""``ArrayFloatOps``: the float op group written once over an array namespace.

Element-wise ops are marked ``in_f32`` (f16 and bf16 that the namespace does not compute natively
arrive in f32 and are rounded once); reductions and running sums of f16 and bf16 accumulate in f32.
Floating-point results follow IEEE as PyTorch does, without warnings: the ops that often meet a
domain error or an overflow (division, logarithms, powers, ...) run under ``runtime.quiet()``; the
commonest cheap ones (``+ - *``, matmul) pay for no context manager and recompute quietly only where
a warning was raised as an error.
"""

from __future__ import annotations

import math
import operator
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from .._distribution import Distribution
from .._dtype import DType
from .._ops.float import FloatTensorOps
from . import _common as c
from ._lowp import in_f32
from ._runtime import LOW_PRECISION
from ._special import erf, erfinv

if TYPE_CHECKING:
    from .._device import Device
    from .._options import GridSampleOptions
    from ._runtime import ArrayRuntime

Array = Any
_BF16 = DType.BF16.numpy
_F32 = DType.F32.numpy
_BF16S = frozenset({_BF16})  # compared by hash: never with another library's dtypes (see _common)


def _scalar(tensor: Array, value: float) -> Any:
    """``value`` as an operand of ``tensor``'s dtype: a Python float keeps a float array's dtype (the
    standard's rule), except in NumPy with ml_dtypes' bf16, which it turns into f32."""
    return _BF16.type(value) if tensor.dtype in _BF16S else value


def _marked(function: Callable[..., Any]) -> Any:
    """A copy of the kind-shared ``function`` marked ``in_f32`` (marking ``function`` itself would
    also mark the int and bool ops bound to it)."""
    code, defaults, closure = function.__code__, function.__defaults__, function.__closure__
    return in_f32(types.FunctionType(code, function.__globals__, function.__name__, defaults, closure))


_FUNCTIONS = {operator.add: "add", operator.sub: "subtract", operator.mul: "multiply"}


def _arithmetic(compute: Callable[[Any, Any], Any], scalar: bool = False) -> Any:
    """``compute(lhs, rhs)`` (an ``operator`` function) with no context manager on the common path; with
    ``scalar``, the namespace's function of that operation (CuPy's operators send an array and a scalar
    through NumPy's ufunc dispatch: slower, and its first call imports SciPy)."""
    name = _FUNCTIONS[compute]

    def op(self: Any, lhs: Array, rhs: Any) -> Array:
        function = compute
        if scalar:
            rhs = _scalar(lhs, rhs)
            function = getattr(self.xp, name)
        try:
            return function(lhs, rhs)
        except RuntimeWarning:  # an overflow, with warnings raised as errors: inf, as in PyTorch
            with self.runtime.quiet():
                return function(lhs, rhs)

    return in_f32(op)


def _unary(name: str, quiet: bool = True) -> Any:
    """``xp.<name>(tensor)``; ``quiet``: without floating-point warnings, for the functions whose domain
    errors and overflows give NaN and inf."""

    def op(self: Any, tensor: Array) -> Array:
        if not quiet:
            return getattr(self.xp, name)(tensor)
        with self.runtime.quiet():
            return getattr(self.xp, name)(tensor)

    return in_f32(op)


def _binary(name: str, scalar: bool = False) -> Any:
    """``xp.<name>(lhs, rhs)`` without floating-point warnings; ``rhs`` a Python float with ``scalar``."""

    def op(self: Any, lhs: Array, rhs: Any) -> Array:
        with self.runtime.quiet():
            return getattr(self.xp, name)(lhs, _scalar(lhs, rhs) if scalar else rhs)

    return in_f32(op)


def _compare(name: str) -> Any:
    """``xp.<name>(lhs, rhs)`` for a Python float ``rhs`` (see ``_bounded``)."""

    def op(self: Any, lhs: Array, rhs: float) -> Array:
        return _bounded(self, getattr(self.xp, name), lhs, rhs)

    return in_f32(op)


def _bounded(self: Any, function: Callable[..., Array], tensor: Array, *scalars: float) -> Array:
    """``function(tensor, *scalars)`` (a comparison, ``maximum``, ``minimum``, ``clip``). For f16 and
    bf16 without warnings (ml_dtypes' bf16 comparisons warn on NaN, and a scalar beyond f16's range
    as it is converted) and with the tensor's dtype kept (NumPy's clip gives f32 for bf16)."""
    if tensor.dtype not in LOW_PRECISION:
        return function(tensor, *scalars)
    with self.runtime.quiet():
        out = function(tensor, *(_scalar(tensor, value) for value in scalars))
    return self.runtime.cast(out, tensor.dtype) if out.dtype == _F32 else out


def _reduce(self: Any, tensor: Array, dim: int | None, name: str) -> Array:
    """``sum``, ``prod`` or ``mean`` along ``dim`` (kept, size 1) or of the whole tensor (shape
    ``(1,)``), accumulated in f32 for f16 and bf16."""
    xp, runtime = self.xp, self.runtime
    with runtime.quiet():
        out = (xp.prod if name == "prod" else xp.sum)(
            runtime.widen(tensor), axis=dim, keepdims=dim is not None
        )
        if name == "mean":
            # sum / count rather than xp.mean, which warns on an empty input instead of giving NaN
            count = math.prod(tensor.shape) if dim is None else tensor.shape[dim]
            out = xp.divide(out, count) if count else xp.multiply(out, math.nan)
    out = runtime.narrow(out, tensor.dtype)
    return out if dim is not None else xp.reshape(out, (1,))


class ArrayFloatOps(FloatTensorOps):
    """The float op group written once against ``self.xp``."""

    runtime: ClassVar[ArrayRuntime]
    xp: ClassVar[Any]
    generator: Callable[[Device], Any]

    float_from_data = c.from_data
    float_into_data = c.into_data
    float_device = c.device_of
    float_to_device = c.to_device
    float_empty = c.empty
    float_full = c.full
    float_reshape = c.reshape
    float_swap_dims = c.swap_dims
    float_permute = c.permute
    float_flip = c.flip
    float_expand = c.expand
    float_unfold = c.unfold
    float_cat = c.cat
    float_repeat_dim = c.repeat_dim
    float_slice = c.slice_
    float_slice_assign = c.slice_assign
    float_gather = c.gather
    float_scatter = c.scatter
    float_scatter_add = c.scatter_add
    float_select = c.select
    float_select_add = c.select_add
    float_gather_nd = c.gather_nd
    float_scatter_nd = c.scatter_nd
    float_mask_select = c.mask_select
    float_mask_where = c.mask_where
    float_mask_fill = c.mask_fill
    float_equal = _marked(c.equal)
    float_not_equal = _marked(c.not_equal)
    float_greater = _marked(c.greater)
    float_greater_equal = _marked(c.greater_equal)
    float_lower = _marked(c.lower)
    float_lower_equal = _marked(c.lower_equal)
    float_argmax = c.argmax
    float_argmin = c.argmin
    float_max = c.max_
    float_max_dim = c.max_dim
    float_min = c.min_
    float_min_dim = c.min_dim
    float_max_dim_with_indices = c.max_dim_with_indices
    float_min_dim_with_indices = c.min_dim_with_indices
    float_cummin = c.cummin
    float_cummax = c.cummax
    float_sort = c.sort
    float_sort_with_indices = c.sort_with_indices
    float_argsort = c.argsort
    float_topk = c.topk
    float_topk_with_indices = c.topk_with_indices
    float_argtopk = c.argtopk
    float_any = _marked(c.any_)
    float_any_dim = _marked(c.any_dim)
    float_all = _marked(c.all_)
    float_all_dim = _marked(c.all_dim)

    def float_random(
        self, shape: tuple[int, ...], distribution: Distribution, device: Device, dtype: DType
    ) -> Array:
        with self.runtime.on_device(device.index):
            generator = self.generator(device)
            return self.runtime.sample(generator, shape, distribution, self.runtime.dtype(dtype))

    float_into_int = float_cast = c.cast

    # -- arithmetic -------------------------------------------------------------------------------
    float_add = _arithmetic(operator.add)
    float_add_scalar = _arithmetic(operator.add, scalar=True)
    float_sub = _arithmetic(operator.sub)
    float_sub_scalar = _arithmetic(operator.sub, scalar=True)
    float_mul = _arithmetic(operator.mul)
    float_mul_scalar = _arithmetic(operator.mul, scalar=True)
    float_div = _binary("divide")
    float_div_scalar = _binary("divide", scalar=True)
    float_remainder = _binary("remainder")
    float_remainder_scalar = _binary("remainder", scalar=True)
    float_neg = _unary("negative", quiet=False)
    float_sign = _unary("sign", quiet=False)

    @in_f32
    def float_clamp(self, tensor: Array, minimum: float, maximum: float) -> Array:
        if minimum != minimum or maximum != maximum:  # a NaN bound: all NaN, as NumPy's clip (not CuPy's)
            return self.xp.full_like(tensor, math.nan)
        return _bounded(self, self.xp.clip, tensor, minimum, maximum)

    @in_f32
    def float_clamp_min(self, tensor: Array, minimum: float) -> Array:
        return _bounded(self, self.xp.maximum, tensor, minimum)

    @in_f32
    def float_clamp_max(self, tensor: Array, maximum: float) -> Array:
        return _bounded(self, self.xp.minimum, tensor, maximum)

    @in_f32
    def float_recip(self, tensor: Array) -> Array:
        with self.runtime.quiet():
            return self.xp.divide(_scalar(tensor, 1.0), tensor)

    def float_matmul(self, lhs: Array, rhs: Array) -> Array:
        runtime = self.runtime
        if lhs.dtype in LOW_PRECISION:
            # NumPy has no BLAS for f16 and bf16: multiply in f32 and round once
            with runtime.quiet():
                return runtime.narrow(runtime.matmul(runtime.widen(lhs), runtime.widen(rhs)), lhs.dtype)
        try:
            return runtime.matmul(lhs, rhs)
        except RuntimeWarning:  # an overflow, with warnings raised as errors: inf, as in PyTorch
            with runtime.quiet():
                return lhs @ rhs

    @in_f32
    def float_cross(self, lhs: Array, rhs: Array, dim: int) -> Array:
        def part(tensor: Array, index: int) -> Array:
            slices = [slice(None)] * tensor.ndim
            slices[dim] = slice(index, index + 1)
            return tensor[tuple(slices)]

        (a0, a1, a2), (b0, b1, b2) = ([part(t, i) for i in range(3)] for t in (lhs, rhs))
        with self.runtime.quiet():
            parts = [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0]
        return self.xp.concat(parts, axis=dim)

    # -- comparisons ------------------------------------------------------------------------------
    float_equal_elem = _compare("equal")
    float_not_equal_elem = _compare("not_equal")
    float_greater_elem = _compare("greater")
    float_greater_equal_elem = _compare("greater_equal")
    float_lower_elem = _compare("less")
    float_lower_equal_elem = _compare("less_equal")
    float_is_nan = _unary("isnan", quiet=False)
    float_is_inf = _unary("isinf", quiet=False)

    # -- reductions -------------------------------------------------------------------------------
    def float_sum(self, tensor: Array) -> Array:
        return _reduce(self, tensor, None, "sum")

    def float_sum_dim(self, tensor: Array, dim: int) -> Array:
        return _reduce(self, tensor, dim, "sum")

    def float_mean(self, tensor: Array) -> Array:
        return _reduce(self, tensor, None, "mean")

    def float_mean_dim(self, tensor: Array, dim: int) -> Array:
        return _reduce(self, tensor, dim, "mean")

    def float_prod(self, tensor: Array) -> Array:
        return _reduce(self, tensor, None, "prod")

    def float_prod_dim(self, tensor: Array, dim: int) -> Array:
        return _reduce(self, tensor, dim, "prod")

    def float_cumsum(self, tensor: Array, dim: int) -> Array:
        with self.runtime.quiet():
            return self.runtime.narrow(
                self.xp.cumulative_sum(self.runtime.widen(tensor), axis=dim), tensor.dtype
            )

    def float_cumprod(self, tensor: Array, dim: int) -> Array:
        with self.runtime.quiet():
            return self.runtime.narrow(
                self.xp.cumulative_prod(self.runtime.widen(tensor), axis=dim), tensor.dtype
            )

    @in_f32
    def float_max_abs(self, tensor: Array) -> Array:
        xp = self.xp
        return xp.reshape(xp.max(xp.abs(tensor)), (1,))

    @in_f32
    def float_max_abs_dim(self, tensor: Array, dim: int) -> Array:
        xp = self.xp
        return xp.max(xp.abs(tensor), axis=dim, keepdims=True)

    # -- element-wise math ------------------------------------------------------------------------
    float_exp = _unary("exp")
    float_log = _unary("log")
    float_log1p = _unary("log1p")
    float_sqrt = _unary("sqrt")
    float_abs = _unary("abs", quiet=False)
    float_cos = _unary("cos")
    float_sin = _unary("sin")
    float_tan = _unary("tan")
    float_cosh = _unary("cosh")
    float_sinh = _unary("sinh")
    float_tanh = _unary("tanh", quiet=False)
    float_acos = _unary("acos")
    float_acosh = _unary("acosh")
    float_asin = _unary("asin")
    float_asinh = _unary("asinh", quiet=False)
    float_atan = _unary("atan", quiet=False)
    float_atanh = _unary("atanh")
    float_round = _unary("round", quiet=False)
    float_floor = _unary("floor", quiet=False)
    float_ceil = _unary("ceil", quiet=False)
    float_trunc = _unary("trunc", quiet=False)
    float_atan2 = _binary("atan2")
    float_powf = _binary("pow")
    float_hypot = _binary("hypot")

    def float_erf(self, tensor: Array) -> Array:
        return erf(self.runtime, tensor)

    def float_erfinv(self, tensor: Array) -> Array:
        return erfinv(self.runtime, tensor)

    @in_f32
    def float_powf_scalar(self, tensor: Array, exponent: float) -> Array:
        with self.runtime.quiet():
            if exponent == 2.0:
                return tensor * tensor  # exact, and cheaper than pow
            if exponent == 0.5:
                # a square root, as NumPy's and PyTorch's pow take it (NaN for -inf, where C's pow and
                # NumPy's f16 give +inf), and cheaper
                return self.xp.sqrt(tensor)
            return self.xp.pow(tensor, _scalar(tensor, exponent))

    @in_f32
    def float_powi(self, lhs: Array, rhs: Array) -> Array:
        with self.runtime.quiet():
            return self.xp.pow(lhs, self.runtime.cast(rhs, lhs.dtype))

    # -- grid sampling ----------------------------------------------------------------------------
    def float_grid_sample_2d(self, tensor: Array, grid: Array, options: GridSampleOptions) -> Array:
        # the interface default's coordinate rules, with one fancy-indexed gather per corner; f16 and
        # bf16 compute in f32 (their bilinear weights lose too much)
        xp, runtime = self.xp, self.runtime
        planes = xp.permute_dims(runtime.widen(tensor), (0, 2, 3, 1))  # channels last: one gather per point
        points = runtime.cast(grid, planes.dtype)
        count, height, width, channels = planes.shape
        index = runtime.dtype(DType.I64)
        batch = xp.reshape(xp.arange(count, dtype=index), (-1, 1, 1))
        # one row per pixel: the standard's integer-array indexing takes an array on every dim or on none
        pixels = xp.reshape(planes, (count * height * width, channels))

        def read(x: Array, y: Array) -> Array:
            # planes at the integral coordinates x, y: [n, h_out, w_out, c], zero outside (and at NaN)
            inside = (x >= 0) & (x <= width - 1) & (y >= 0) & (y <= height - 1)
            rows, columns = (runtime.cast(xp.where(inside, v, 0.0), index) for v in (y, x))
            at = (batch * height + rows) * width + columns
            picked = xp.reshape(xp.take(pixels, xp.reshape(at, (-1,)), axis=0), (*at.shape, channels))
            return xp.where(inside[..., None], picked, 0.0)

        with runtime.quiet():
            x = _source(xp, points[..., 0], planes.shape[2], options)
            y = _source(xp, points[..., 1], planes.shape[1], options)
            if options.mode == "nearest":
                out = read(xp.round(x), xp.round(y))
            else:
                x0, y0 = xp.floor(x), xp.floor(y)
                x1, y1 = x0 + 1, y0 + 1
                right, down, left, up = (d[..., None] for d in (x - x0, y - y0, x1 - x, y1 - y))
                out = read(x0, y0) * (left * up) + read(x1, y0) * (right * up)
                out = out + read(x0, y1) * (left * down) + read(x1, y1) * (right * down)
        return runtime.narrow(xp.permute_dims(out, (0, 3, 1, 2)), tensor.dtype)


def _source(xp: Any, coord: Array, size: int, options: GridSampleOptions) -> Array:
    """Normalized coordinates along a dim of ``size`` samples -> sample indices after the padding mode
    (PyTorch's ``grid_sampler_compute_source_index``, in its op order)."""
    if options.align_corners:
        coord = (coord + 1) / 2 * (size - 1)
    else:
        coord = ((coord + 1) * size - 1) / 2
    if options.padding_mode == "zeros":
        return coord
    if options.padding_mode == "reflection":
        twice_low, twice_high = (0, 2 * (size - 1)) if options.align_corners else (-1, 2 * size - 1)
        if twice_low == twice_high:
            coord = xp.zeros_like(coord)
        else:
            low, span = twice_low / 2, (twice_high - twice_low) / 2
            distance = xp.abs(coord - low)
            extra = xp.remainder(distance, span)  # distance >= 0: the same as fmod
            odd = xp.remainder(xp.floor(distance / span), 2) == 1
            coord = xp.where(odd, (span + low) - extra, extra + low)
    return xp.clip(xp.where(xp.isnan(coord), 0.0, coord), 0.0, float(size - 1))  # NaN clamps to 0
