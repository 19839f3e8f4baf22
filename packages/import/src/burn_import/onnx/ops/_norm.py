"""Normalizations: batch, instance, layer, group, RMS and Lp normalization, ``LRN`` and
``MeanVarianceNormalization``."""

from __future__ import annotations

from burn_backend import DType, Tensor
from burn_backend import module as F

from ._registry import Context, Value, register
from ._util import axis as norm_axis

__all__: list[str] = []


def _channel_shape(t: Tensor) -> list[int]:
    return [1, -1] + [1] * (t.rank - 2)


@register("BatchNormalization", attrs=("epsilon", "momentum", "training_mode", "spatial", "is_test"))
def batch_norm(
    ctx: Context, x: Value, scale: Value, bias: Value, mean: Value, var: Value
) -> Tensor | tuple[Tensor, ...]:
    t = ctx.tensor(x)
    eps = float(ctx.attr("epsilon", 1e-5))
    shape = _channel_shape(t)
    s, b = ctx.tensor(scale).reshape(shape), ctx.tensor(bias).reshape(shape)
    m, v = ctx.tensor(mean), ctx.tensor(var)
    if int(ctx.attr("training_mode", 0)):
        axes = [0, *range(2, t.rank)]
        batch_mean = t
        for a in axes:
            batch_mean = batch_mean.mean_dim(a)
        centered = t.sub(batch_mean)
        batch_var = centered.mul(centered)
        for a in axes:
            batch_var = batch_var.mean_dim(a)
        out = centered.div(batch_var.add_scalar(eps).sqrt()).mul(s).add(b)
        momentum = float(ctx.attr("momentum", 0.9))
        running_mean = m.mul_scalar(momentum).add(batch_mean.reshape([-1]).mul_scalar(1 - momentum))
        running_var = v.mul_scalar(momentum).add(batch_var.reshape([-1]).mul_scalar(1 - momentum))
        return out, running_mean, running_var
    inv = v.add_scalar(eps).sqrt().recip().reshape(shape).mul(s)
    return t.sub(m.reshape(shape)).mul(inv).add(b)


@register("InstanceNormalization", attrs=("epsilon",))
def instance_norm(ctx: Context, x: Value, scale: Value, bias: Value) -> Tensor:
    t = ctx.tensor(x)
    eps = float(ctx.attr("epsilon", 1e-5))
    axes = list(range(2, t.rank))
    shape = _channel_shape(t)
    out = _standardize(t, axes, eps)
    return out.mul(ctx.tensor(scale).reshape(shape)).add(ctx.tensor(bias).reshape(shape))


def _standardize(t: Tensor, axes: list[int], eps: float) -> Tensor:
    mean = t
    for a in axes:
        mean = mean.mean_dim(a)
    centered = t.sub(mean)
    var = centered.mul(centered)
    for a in axes:
        var = var.mean_dim(a)
    return centered.div(var.add_scalar(eps).sqrt())


def _stash(ctx: Context, t: Tensor) -> Tensor:
    """``t`` in the stash precision (f32 unless ``stash_type`` says otherwise) for the statistics."""
    stash = int(ctx.attr("stash_type", 1))
    want = DType.F64 if stash == 11 else DType.F32
    return t if t.dtype == want or t.dtype == DType.F64 else t.float(want)


@register("LayerNormalization", attrs=("axis", "epsilon", "stash_type"))
def layer_norm(ctx: Context, x: Value, scale: Value, bias: Value = None) -> Tensor | tuple[Tensor, ...]:
    t = ctx.tensor(x)
    eps = float(ctx.attr("epsilon", 1e-5))
    ax = norm_axis(ctx, int(ctx.attr("axis", -1)), t.rank)
    axes = list(range(ax, t.rank))
    work = _stash(ctx, t)
    gamma = ctx.tensor(scale)
    beta = None if bias is None else ctx.tensor(bias)
    last = [t.dims()[-1]]
    if (
        ax == t.rank - 1
        and work is t
        and not (ctx.wants(1) or ctx.wants(2))
        and gamma.dims() == last
        and gamma.dtype == t.dtype
        and (beta is None or (beta.dims() == last and beta.dtype == t.dtype))
    ):
        # the backend's layer norm reads the input once or twice (NdArray's is one kernel), where the
        # composed form below makes nine passes
        return F.layer_norm(t, gamma, beta, eps)
    mean = work
    for a in axes:
        mean = mean.mean_dim(a)
    centered = work.sub(mean)
    var = centered.mul(centered)
    for a in axes:
        var = var.mean_dim(a)
    inv_std = var.add_scalar(eps).sqrt().recip()
    out = centered.mul(inv_std)
    if out.dtype != t.dtype:
        out = out.float(t.dtype)
    out = out.mul(gamma)
    if beta is not None:
        out = out.add(beta)
    if ctx.n_outputs > 1:
        return out, mean, inv_std
    return out


@register("GroupNormalization", attrs=("epsilon", "num_groups", "stash_type"))
def group_norm(ctx: Context, x: Value, scale: Value, bias: Value) -> Tensor:
    t = ctx.tensor(x)
    eps = float(ctx.attr("epsilon", 1e-5))
    groups = int(ctx.attr("num_groups"))
    dims = t.dims()
    grouped = _stash(ctx, t).reshape([dims[0], groups, -1])
    out = _standardize(grouped, [2], eps).reshape(dims)
    if out.dtype != t.dtype:
        out = out.float(t.dtype)
    s, b = ctx.tensor(scale), ctx.tensor(bias)
    channels = dims[1]
    if s.dims()[0] != channels:  # opset 18: one scale per group
        s = s.reshape([groups, 1]).expand([groups, channels // groups]).reshape([channels])
        b = b.reshape([groups, 1]).expand([groups, channels // groups]).reshape([channels])
    shape = _channel_shape(t)
    return out.mul(s.reshape(shape)).add(b.reshape(shape))


@register("RMSNormalization", attrs=("axis", "epsilon", "stash_type"))
def rms_norm(ctx: Context, x: Value, scale: Value) -> Tensor:
    t = ctx.tensor(x)
    eps = float(ctx.attr("epsilon", 1e-5))
    ax = norm_axis(ctx, int(ctx.attr("axis", -1)), t.rank)
    work = _stash(ctx, t)
    ms = work.mul(work)
    for a in range(ax, t.rank):
        ms = ms.mean_dim(a)
    out = work.div(ms.add_scalar(eps).sqrt())
    if out.dtype != t.dtype:
        out = out.float(t.dtype)
    return out.mul(ctx.tensor(scale))


@register("LpNormalization", attrs=("axis", "p"))
def lp_norm(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    ax = norm_axis(ctx, int(ctx.attr("axis", -1)), t.rank)
    p = int(ctx.attr("p", 2))
    norm = t.abs().sum_dim(ax) if p == 1 else t.mul(t).sum_dim(ax).sqrt()
    return t.div(norm).mask_fill(norm.equal_elem(0).expand(t.dims()), 0.0)


@register("LRN", attrs=("alpha", "beta", "bias", "size"))
def lrn(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    alpha, beta = float(ctx.attr("alpha", 1e-4)), float(ctx.attr("beta", 0.75))
    bias, size = float(ctx.attr("bias", 1.0)), int(ctx.attr("size"))
    channels = t.dims()[1]
    squares = t.mul(t)
    before, after = (size - 1) // 2, size - 1 - (size - 1) // 2
    from ._util import pad_constant

    padded = pad_constant(
        squares, [0, before] + [0] * (t.rank - 2), [0, after] + [0] * (t.rank - 2), 0.0, ctx
    )
    total = padded.narrow(1, 0, channels)
    for i in range(1, size):
        total = total.add(padded.narrow(1, i, channels))
    return t.div(total.mul_scalar(alpha / size).add_scalar(bias).powf(beta))


@register("MeanVarianceNormalization", attrs=("axes",))
def mean_variance_norm(ctx: Context, x: Value) -> Tensor:
    t = ctx.tensor(x)
    axes = [norm_axis(ctx, int(a), t.rank) for a in (ctx.attr("axes") or [0, 2, 3])]
    return _standardize(t, axes, 1e-9)
