"""Activation operators, and ``Softmax``/``LogSoftmax``/``Hardmax`` (with the pre-13 semantics of
coercing the input to 2-d at ``axis``)."""

from __future__ import annotations

import math

from burn_backend import Kind, Tensor
from burn_backend import activation as A

from ._registry import Context, Value, register
from ._util import axis as norm_axis
from ._util import same_dtype

__all__: list[str] = []


@register("Relu")
def relu(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    return A.relu(t) if t.kind is Kind.FLOAT else t.clamp_min(0)


@register("LeakyRelu", attrs=("alpha",))
def leaky_relu(ctx: Context, x: Value) -> Tensor:
    return A.leaky_relu(ctx.tensor(x), float(ctx.attr("alpha", 0.01)))


@register("PRelu")
def prelu(ctx: Context, x: Value, slope: Value) -> Tensor:
    t, s = same_dtype(ctx, x, slope)
    return t.mask_where(t.lower_elem(0), t.mul(s))


@register("Elu", attrs=("alpha",))
def elu(ctx: Context, x: Value) -> Tensor:
    return A.elu(ctx.tensor(x), float(ctx.attr("alpha", 1.0)))


@register("Selu", attrs=("alpha", "gamma"))
def selu(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    alpha = float(ctx.attr("alpha", 1.67326319217681884765625))
    gamma = float(ctx.attr("gamma", 1.05070102214813232421875))
    negative = t.clamp_max(0).exp().sub_scalar(1).mul_scalar(alpha)
    return t.mask_where(t.lower_equal_elem(0), negative).mul_scalar(gamma)


@register("Celu", attrs=("alpha",))
def celu(ctx: Context, x: Value) -> Tensor:
    return A.celu(ctx.tensor(x), float(ctx.attr("alpha", 1.0)))


@register("Sigmoid")
def sigmoid(ctx: Context, x: Value) -> Tensor:
    return A.sigmoid(ctx.tensor(x))


@register("HardSigmoid", attrs=("alpha", "beta"))
def hard_sigmoid(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    alpha, beta = float(ctx.attr("alpha", 0.2)), float(ctx.attr("beta", 0.5))
    return t.mul_scalar(alpha).add_scalar(beta).clamp(0.0, 1.0)


@register("HardSwish")
def hard_swish(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    return t.mul(t.mul_scalar(1 / 6).add_scalar(0.5).clamp(0.0, 1.0))


@register("Softplus")
def softplus(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    # log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)), stable for large |x|
    return t.clamp_min(0).add(t.abs().neg().exp().log1p())


@register("Softsign")
def softsign(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    return t.div(t.abs().add_scalar(1))


@register("Gelu", attrs=("approximate",), check=lambda n: _check_gelu(n))
def gelu(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    if ctx.attr("approximate", "none") == "tanh":
        inner = t.add(t.mul(t).mul(t).mul_scalar(0.044715)).mul_scalar(math.sqrt(2 / math.pi))
        return t.mul(inner.tanh().add_scalar(1)).mul_scalar(0.5)
    return t.mul(t.mul_scalar(1 / math.sqrt(2)).erf().add_scalar(1)).mul_scalar(0.5)


def _check_gelu(node: object) -> str | None:
    value = getattr(node, "attrs", {}).get("approximate", "none")
    return None if value in ("none", "tanh") else f"approximate={value!r} is not 'none' or 'tanh'"


@register("Mish")
def mish(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    sp = t.clamp_min(0).add(t.abs().neg().exp().log1p())
    return t.mul(sp.tanh())


@register("ThresholdedRelu", attrs=("alpha",))
def thresholded_relu(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    return t.mask_fill(t.lower_equal_elem(float(ctx.attr("alpha", 1.0))), 0.0)


@register("Shrink", attrs=("bias", "lambd"))
def shrink(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    bias, lambd = ctx.attr("bias", 0.0), ctx.attr("lambd", 0.5)
    if t.kind is Kind.INT:
        f = t.float("f64")
        out = f.add_scalar(bias).mask_where(f.greater_equal_elem(-lambd), f.sub_scalar(bias))
        out = out.mask_fill(f.abs().lower_equal_elem(lambd), 0.0)
        return out.int(t.dtype)
    out = t.add_scalar(bias).mask_where(t.greater_equal_elem(-lambd), t.sub_scalar(bias))
    return out.mask_fill(t.abs().lower_equal_elem(lambd), 0.0)


@register("Swish", attrs=("alpha",))
def swish(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    return t.mul(A.sigmoid(t.mul_scalar(float(ctx.attr("alpha", 1.0)))))


# -- softmax family -------------------------------------------------------------------------------
def _coerced(ctx: Context, t: Tensor, default: int) -> tuple[Tensor, int, list[int]]:
    """The tensor and the dim to normalize over: opset >= 13 uses ``axis`` itself; earlier opsets
    flatten to 2-d at ``axis`` and normalize over dim 1."""
    rank = t.rank
    ax = int(ctx.attr("axis", default if ctx.opset >= 13 else 1))
    if rank == 0:
        return t, 0, []
    ax = norm_axis(ctx, ax, rank)
    if ctx.opset >= 13:
        return t, ax, []
    dims = t.dims()
    outer = 1
    for d in dims[:ax]:
        outer *= d
    return t.reshape([outer, -1 if outer else 0] if outer else [0, 0]), 1, dims


def _softmax_like(ctx: Context, x: Value, fn: str) -> Tensor:
    t = ctx.tensor(x)
    if t.rank == 0:
        return {"softmax": t.ones_like(), "log": t.zeros_like(), "hard": t.ones_like()}[fn]
    flat, dim, original = _coerced(ctx, t, -1)
    if flat.num_elements() == 0:
        return t
    if fn == "softmax":
        out = A.softmax(flat, dim)
    elif fn == "log":
        out = A.log_softmax(flat, dim)
    else:
        index = flat.argmax(dim)
        out = index.equal(
            Tensor.arange(flat.dims()[dim], device=ctx.device, dtype=index.dtype).reshape(
                [flat.dims()[dim] if i == dim else 1 for i in range(flat.rank)]
            )
        ).float(flat.dtype)
        # argmax returns the first maximum, as ONNX's Hardmax wants
    return out.reshape(original) if original else out


@register("Softmax", attrs=("axis",))
def softmax(ctx: Context, x: Value) -> Tensor:
    return _softmax_like(ctx, x, "softmax")


@register("LogSoftmax", attrs=("axis",))
def log_softmax(ctx: Context, x: Value) -> Tensor:
    return _softmax_like(ctx, x, "log")


@register("Hardmax", attrs=("axis",))
def hardmax(ctx: Context, x: Value) -> Tensor:
    return _softmax_like(ctx, x, "hard")
