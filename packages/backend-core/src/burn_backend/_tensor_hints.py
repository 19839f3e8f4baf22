"""Where a Python user reaches for a PyTorch (or NumPy) spelling that Burn names differently, the error
names Burn's method. One table serves two doors: attribute lookup of a name ``Tensor`` lacks
(``x.view(...)``) and the argument checks of methods that exist under both names with other arguments
(``x.sum(1)``).

The names ``Tensor`` lacks are class attributes whose read raises, installed once by
``install_spellings``, rather than a ``__getattr__``: a class with ``__getattr__`` has a custom attribute
lookup, which stops CPython from specializing every attribute read of its instances (``self._primitive``
on the hot path of each op: a 2x2 add took 1.93 us instead of 1.59)."""

from __future__ import annotations

from typing import Any


class PyTorchSpellingError(AttributeError, TypeError):
    """A PyTorch or NumPy spelling that ``Tensor`` spells Burn's way; the message names Burn's method.

    Both an ``AttributeError`` (so ``hasattr(tensor, "view")`` stays false and duck typing keeps
    working) and a ``TypeError`` (what a wrong call is).

    Example:
        >>> try:
        ...     Tensor.ones([2, 3]).size()
        ... except TypeError as error:
        ...     print(error)
        Tensor.size() is PyTorch's spelling: use the shape property or dims() (a list of ints)
    """


# a name Tensor lacks -> what to use instead
MISSING: dict[str, str] = {
    "view": "reshape(shape) (tensors have no views: reshape returns a new tensor)",
    "view_as": "reshape(other.dims())",
    "reshape_as": "reshape(other.dims())",
    "expand_as": "expand(other.dims())",
    "size": "the shape property or dims() (a list of ints)",
    "numel": "num_elements()",
    "nelement": "num_elements()",
    "dim": "the rank property (or ndim)",
    "ndimension": "the rank property (or ndim)",
    "cuda": "to_device(device), e.g. to_device('cuda:0') or a Cuda().device(0)",
    "cpu": "to_device(device), e.g. to_device('ndarray'), or to_numpy() for the values",
    "to": "to_device(device) to move, cast(dtype) to convert",
    "type": "cast(dtype)",
    "type_as": "cast(other.dtype)",
    "long": "int(DType.I64) (or int() for the device's int dtype)",
    "half": "float(DType.F16)",
    "double": "float(DType.F64)",
    "bfloat16": "float(DType.BF16)",
    "contiguous": "nothing: every tensor reads as contiguous; drop the call",
    "masked_fill": "mask_fill(mask, value)",
    "masked_select": "mask_select(mask)",
    "masked_scatter": "mask_where(mask, values)",
    "index_select": "select(dim, indices)",
    "index_add": "select_assign(dim, indices, values) (it adds)",
    "index_fill": "mask_fill(mask, value) or select_assign(...)",
    "take_along_dim": "gather(dim, indices)",
    "eq": "equal(other) (or ==)",
    "ne": "not_equal(other) (or !=)",
    "gt": "greater(other) (or >)",
    "ge": "greater_equal(other) (or >=)",
    "lt": "lower(other) (or <)",
    "le": "lower_equal(other) (or <=)",
    "maximum": "max_pair(other)",
    "minimum": "min_pair(other)",
    "fmax": "max_pair(other)",
    "fmin": "min_pair(other)",
    "amax": "max_dims(dims) (keeps the dims)",
    "amin": "min_dims(dims) (keeps the dims)",
    "logical_and": "bool_and(other) (or &)",
    "logical_or": "bool_or(other) (or |)",
    "logical_xor": "bool_xor(other) (or ^)",
    "logical_not": "bool_not() (or ~)",
    "reciprocal": "recip()",
    "isnan": "is_nan()",
    "isinf": "is_inf()",
    "isfinite": "is_finite()",
    "isclose": "is_close(other, rtol, atol)",
    "allclose": "all_close(other, rtol, atol)",
    "clip": "clamp(min, max), clamp_min(min) or clamp_max(max)",
    "masked_where": "mask_where(mask, values)",
    "requires_grad_": "require_grad() (or set_require_grad(flag))",
    "requires_grad": "is_require_grad()",
    "mT": "transpose() (swaps the last two dims)",
    "nansum": "nan_to_num(0.0).sum()",
    "unbind": "list(tensor) (along dim 0) or chunk(size, dim) then squeeze_dim(dim)",
    "softmax": "burn_backend.activation.softmax(tensor, dim)",
    "log_softmax": "burn_backend.activation.log_softmax(tensor, dim)",
    "relu": "burn_backend.activation.relu(tensor)",
    "sigmoid": "burn_backend.activation.sigmoid(tensor)",
    "new_zeros": "Tensor.zeros(shape, tensor.device, tensor.dtype) (or zeros_like())",
    "new_ones": "Tensor.ones(shape, tensor.device, tensor.dtype) (or ones_like())",
    "new_full": "Tensor.full(shape, value, tensor.device, tensor.dtype) (or full_like(value))",
    "new_tensor": "Tensor.from_data(data, tensor.device, tensor.dtype)",
    "astype": "cast(dtype)",
    "nonzero_static": "argwhere()",
}

# a method that exists, called with the arguments of its PyTorch namesake -> Burn's spelling
ARGUMENTS: dict[str, str] = {
    "sum": "sum() takes no dim: use sum_dim({dim}) (keeps the dim, like torch.sum(x, {dim}, keepdim=True)) "
    "or sum_dims([...]) for several",
    "mean": "mean() takes no dim: use mean_dim({dim}) (keeps the dim, like torch.mean(x, {dim}, "
    "keepdim=True)) or mean_dims([...]) for several",
    "prod": "prod() takes no dim: use prod_dim({dim}) (keeps the dim, like torch.prod(x, {dim}, "
    "keepdim=True))",
    "max": "max() takes no dim: use max_dim({dim}) (keeps the dim) or max_dim_with_indices({dim}) for "
    "torch.max(x, {dim}); max_pair(other) for torch.maximum(x, other)",
    "min": "min() takes no dim: use min_dim({dim}) (keeps the dim) or min_dim_with_indices({dim}) for "
    "torch.min(x, {dim}); min_pair(other) for torch.minimum(x, other)",
    "any": "any() takes no dim: use any_dim({dim}) (keeps the dim)",
    "all": "all() takes no dim: use all_dim({dim}) (keeps the dim)",
    "argmax": "argmax(dim) needs a dim (it keeps the dim); for the flat index use flatten().argmax(0)",
    "argmin": "argmin(dim) needs a dim (it keeps the dim); for the flat index use flatten().argmin(0)",
    "var": "var(dim) needs a dim (unbiased, keeps the dim); for all values use flatten().var(0)",
    "std": "std(dim) needs a dim (unbiased, keeps the dim); for all values use flatten().std(0)",
    "transpose": "transpose() takes no dims (it swaps the last two): use swap_dims({dim}) for "
    "torch.transpose(x, d0, d1)",
    "split": "split(split_size, dim) takes one size: use split_with_sizes([{dim}], dim) for a list of sizes",
    "unsqueeze": "unsqueeze(dim) is PyTorch's spelling: use unsqueeze_dim({dim}) (a new dim of size 1 at "
    "{dim}); unsqueeze() adds one leading dim, and unsqueeze(rank=n) leading dims up to rank n (Burn's "
    "unsqueeze::<n>())",
}


def spelling_error(name: str) -> PyTorchSpellingError | None:
    """The error for ``Tensor.<name>``, a name ``Tensor`` lacks, if ``name`` is a known PyTorch or NumPy
    spelling (or an in-place ``<op>_`` whose ``<op>`` exists); ``None`` otherwise."""
    hint = MISSING.get(name)
    if hint is not None:
        return PyTorchSpellingError(f"Tensor.{name}() is PyTorch's spelling: use {hint}")
    if name.endswith("_") and not name.startswith("_"):
        from ._tensor import Tensor  # the class is complete by the time a user calls this

        if hasattr(Tensor, name[:-1]):
            return PyTorchSpellingError(
                f"Tensor.{name}(): tensors are immutable, there are no in-place ops; use "
                f"{name[:-1]}(...), which returns a new tensor"
            )
    return None


class _Spelling:
    """A class attribute standing for a name the class lacks: reading it, on the class or an instance,
    raises the error naming Burn's spelling (an ``AttributeError``, so ``hasattr`` stays false)."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        raise PyTorchSpellingError(self.message)  # a new error per read: no traceback piles up


SPELLINGS: set[str] = set()
"""The names ``install_spellings`` put on ``Tensor`` (left out of ``dir()``)."""


def install_spellings(cls: type) -> None:
    """Put on ``cls`` (``Tensor``, once complete) an attribute whose read raises the spelling error for each
    name of ``MISSING`` and each in-place ``<name>_`` of its public attributes, where ``cls`` lacks it."""
    inplace = [f"{name}_" for name in dir(cls) if not name.startswith("_")]
    for name in [*MISSING, *inplace]:
        if name in SPELLINGS or hasattr(cls, name):
            continue
        error = spelling_error(name)
        if error is not None:
            setattr(cls, name, _Spelling(str(error)))
            SPELLINGS.add(name)


def clamp_error(minimum: Any, maximum: Any, keywords: dict[str, Any]) -> PyTorchSpellingError:
    """The error for ``clamp`` called as PyTorch's: ``min=``/``max=`` keywords (``keywords``, those given)
    or one bound (``None`` for the other)."""
    positional = [minimum, maximum] if maximum is not None else [minimum] if minimum is not None else []
    shown = [repr(value) for value in positional]
    shown += [f"{name}={value!r}" for name, value in keywords.items()]
    low = keywords.get("min", minimum)
    high = keywords.get("max", maximum)
    if low is not None and high is not None:
        use = f"clamp({low!r}, {high!r}) (both bounds, positional)"
    elif low is not None:
        use = f"clamp_min({low!r})"
    elif high is not None:
        use = f"clamp_max({high!r})"
    else:
        return PyTorchSpellingError(
            "Tensor.clamp() takes both bounds: use clamp(min, max), clamp_min(min) or clamp_max(max)"
        )
    return PyTorchSpellingError(
        f"Tensor.clamp({', '.join(shown)}) is PyTorch's spelling: use {use}; Burn's clamp takes both "
        "bounds, in order, and clamp_min / clamp_max one"
    )


def argument_error(method: str, given: Any) -> PyTorchSpellingError:
    """The error for ``Tensor.<method>`` called with the arguments of its PyTorch namesake (``given``,
    usually the dim, fills the hint)."""
    if isinstance(given, (list, tuple)) and method in ("sum", "mean", "prod", "max", "min"):
        torch_name = {"max": "amax", "min": "amin"}.get(method, method)
        return PyTorchSpellingError(
            f"Tensor.{method}() takes no dims: use {method}_dims({list(given)}) (keeps the dims, like "
            f"torch.{torch_name}(x, dims, keepdim=True))"
        )
    if isinstance(given, (list, tuple)):
        shown = ", ".join(map(repr, given))
    elif isinstance(given, int) and not isinstance(given, bool):
        shown = str(given)
    else:
        shown = "dim"
    return PyTorchSpellingError(f"Tensor.{ARGUMENTS[method].format(dim=shown)}")
