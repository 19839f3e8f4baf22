"""Special functions the array API standard lacks, written over its namespace."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .._dtype import DType

if TYPE_CHECKING:
    from ._runtime import ArrayRuntime

Array = Any
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_ONE_OVER_SQRT_PI = 1.0 / math.sqrt(math.pi)

# (upper bound of |x|, method, terms) per region, for f64 and for lower precisions. Term counts are the
# fewest that reach the dtype's precision at the region's upper bound (checked against math.erf).
_PLAN_F64 = ((1.0, "series", 22), (2.5, "series", 70), (6.0, "fraction", 80))
_PLAN_LOW = ((1.0, "series", 11), (2.5, "series", 36), (4.0, "fraction", 30))


def _series(xp: Any, a: Array, terms: int) -> Array:
    # erf(x) = 2/sqrt(pi) exp(-x^2) sum_n 2^n x^(2n+1) / (2n+1)!!: every term positive, no cancellation
    x2 = a * a
    term = xp.asarray(a, copy=True)
    total = xp.asarray(a, copy=True)
    for n in range(1, terms):
        term *= (2.0 / (2 * n + 1)) * x2
        total += term
    return _TWO_OVER_SQRT_PI * xp.exp(-x2) * total


def _erfc_fraction(xp: Any, a: Array, depth: int) -> Array:
    # erfc(x) from its continued fraction, evaluated from a fixed depth upwards: exact in the tail, where
    # 1 - erf(x) loses digits
    fraction = a
    for k in range(depth, 0, -1):
        fraction = a + (0.5 * k) / fraction
    return xp.exp(-a * a) * _ONE_OVER_SQRT_PI / fraction


def _fraction(xp: Any, a: Array, depth: int) -> Array:
    # erf(x) = 1 - erfc(x)
    return 1.0 - _erfc_fraction(xp, a, depth)


def erf(runtime: ArrayRuntime, x: Array) -> Array:
    """The error function of float array ``x``, computed in f64 and returned in ``x``'s dtype: to ~1e-15
    relative for f64, to the dtype's precision otherwise.

    |x| is split into regions, each evaluated with as many terms as its dtype needs: the all-positive
    series below 2.5, erfc's continued fraction above, and 1 where erfc is below the dtype's precision.
    """
    xp = runtime.xp
    f64 = runtime.dtype(DType.F64)
    plan = _PLAN_F64 if x.dtype == f64 else _PLAN_LOW
    wide = runtime.cast(x, f64)
    a = xp.abs(wide)
    out = xp.ones_like(a)  # the region beyond the plan, and |x| = inf
    low = 0.0
    with runtime.quiet():
        for high, method, terms in plan:
            region = (a >= low) & (a < high) if low else a < high
            values = a[region]
            if values.size:
                out[region] = (
                    _series(xp, values, terms) if method == "series" else _fraction(xp, values, terms)
                )
            low = high
        out[xp.isnan(a)] = math.nan
    return runtime.cast(xp.copysign(out, wide), x.dtype)


def erfinv(runtime: ArrayRuntime, y: Array) -> Array:
    """The inverse error function of float array ``y``, computed in f64 and returned in ``y``'s dtype
    (``inf`` at 1, NaN beyond).

    Winitzki's approximation, then Newton steps on ``erf(x) = |y|``; where ``|y| > 1/2`` the steps solve
    ``erfc(x) = 1 - |y|`` instead (``1 - |y|`` is exact there, and ``erfc`` comes from its continued
    fraction beyond 2.5), so values near 1 keep their digits.
    """
    xp = runtime.xp
    f64 = runtime.dtype(DType.F64)
    wide = runtime.cast(y, f64)
    a = xp.abs(wide)
    with runtime.quiet():
        inside = a < 1.0
        safe = xp.where(inside, a, 0.5)  # the steps run on values in (-1, 1); the rest is set below
        ln = xp.log((1.0 - safe) * (1.0 + safe))
        t = 2.0 / (math.pi * 0.147) + ln / 2.0
        x = xp.sqrt(xp.sqrt(t * t - ln / 0.147) - t)
        tail = safe > 0.5
        rest = 1.0 - safe
        for _ in range(5):
            far = x >= 2.5
            near = erf(runtime, xp.where(far, 0.0, x))
            erfc = xp.where(far, _erfc_fraction(xp, xp.where(far, x, 2.5), 80), 1.0 - near)
            residual = xp.where(tail, rest - erfc, near - safe)
            x = x - residual * (math.sqrt(math.pi) / 2.0) * xp.exp(x * x)
        edge = xp.where(a == 1.0, xp.full_like(a, math.inf), xp.full_like(a, math.nan))  # and NaN
        out = xp.where(inside, x, edge)
    return runtime.cast(xp.copysign(out, wide), y.dtype)
