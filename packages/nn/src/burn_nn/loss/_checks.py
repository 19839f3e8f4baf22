"""Input checks shared by the losses: each error names the loss, the argument, its shape and dtype."""

from __future__ import annotations

from collections.abc import Sequence

from burn_backend import Device, DType, Kind, Tensor

# the smallest positive normal value of each float dtype (Burn's ``finfo().min_positive``)
_TINY = {
    DType.F64: 2.2250738585072014e-308,
    DType.F32: 1.1754943508222875e-38,
    DType.F16: 6.103515625e-05,
    DType.BF16: 1.1754943508222875e-38,
}


def tiny(dtype: DType) -> float:
    """The smallest positive normal value of the float ``dtype``."""
    return _TINY[dtype]


def describe(tensor: Tensor) -> str:
    """``shape [2, 3] of f32``."""
    return f"shape {tensor.dims()} of {tensor.dtype}"


def check_tensor(loss: str, name: str, value: object) -> Tensor:
    """``value`` as a tensor; a ``TypeError`` naming the argument otherwise."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{loss}: {name} must be a Tensor, got {type(value).__name__}")
    return value


def _check_kind(loss: str, name: str, value: object, kind: Kind, expected: str, rank: int | None) -> Tensor:
    """``value`` as a tensor of ``kind`` (``expected`` says what that is), of rank ``rank`` when given."""
    tensor = check_tensor(loss, name, value)
    if tensor.kind is not kind:
        raise TypeError(f"{loss}: {name} must be {expected}, got {describe(tensor)}")
    if rank is not None and tensor.rank != rank:
        raise ValueError(f"{loss}: {name} must have rank {rank}, got {describe(tensor)}")
    return tensor


def check_float(loss: str, name: str, value: object, rank: int | None = None) -> Tensor:
    """``value`` as a Float tensor (of rank ``rank`` when given)."""
    return _check_kind(loss, name, value, Kind.FLOAT, "a Float tensor", rank)


def check_int(loss: str, name: str, value: object, rank: int | None = None) -> Tensor:
    """``value`` as an Int tensor (of rank ``rank`` when given)."""
    return _check_kind(loss, name, value, Kind.INT, "an Int tensor of class indices", rank)


def check_same_shape(loss: str, first: str, a: Tensor, second: str, b: Tensor) -> None:
    """Raise unless ``a`` and ``b`` have one shape."""
    if a.dims() != b.dims():
        raise ValueError(f"{loss}: {first} and {second} need one shape, got {a.dims()} and {b.dims()}")


def check_same_dtype(loss: str, first: str, a: Tensor, second: str, b: Tensor) -> None:
    """Raise unless ``a`` and ``b`` have one dtype (losses do not promote)."""
    if a.dtype != b.dtype:
        raise TypeError(f"{loss}: {first} and {second} need one dtype, got {a.dtype} and {b.dtype}")


def check_class_indices(loss: str, name: str, indices: Tensor, num_classes: int) -> None:
    """Raise unless every value of the Int tensor ``indices`` lies in ``[0, num_classes)``; only where
    the backend ``validates_index_values`` (reading them back from a GPU would wait for it each step)."""
    if indices.num_elements() == 0 or not indices.device.backend.validates_index_values:
        return
    low, high = indices.min().into_scalar(), indices.max().into_scalar()
    if low < 0 or high >= num_classes:
        raise ValueError(
            f"{loss}: {name} must be class indices in [0, {num_classes}), got values in [{low}, {high}]"
        )


def check_probabilities(loss: str, name: str, tensor: Tensor, hint: str = "") -> None:
    """Raise unless every value of ``tensor`` lies in ``[0, 1]`` (NaN does not), as PyTorch's
    ``binary_cross_entropy`` requires; only where the backend ``validates_index_values`` (the check reads
    the values back, which on a GPU would wait for it each step)."""
    if tensor.num_elements() == 0 or not tensor.device.backend.validates_index_values:
        return
    inside = tensor.greater_equal_elem(0).bool_and(tensor.lower_equal_elem(1)).all()
    if not inside.into_scalar():
        low, high = tensor.min().into_scalar(), tensor.max().into_scalar()
        found = "NaN" if low != low or high != high else f"values in [{low:.6g}, {high:.6g}]"
        raise ValueError(f"{loss}: {name} must be probabilities in [0, 1], got {found}{hint}")


def class_weights_and_smoothing(
    loss: str, weights: Sequence[float] | None, smoothing: float | None, device: Device
) -> tuple[Tensor | None, float | None]:
    """A loss config's class ``weights`` (positive) as a constant tensor on ``device`` and its label
    ``smoothing`` (in ``[0, 1]``) as a float; ``None`` for either when not set.

    Raises:
        ValueError: ``smoothing`` is outside ``[0, 1]`` or a weight is not positive.
    """
    if smoothing is not None and not 0.0 <= smoothing <= 1.0:
        raise ValueError(f"{loss}: smoothing (alpha) must be in [0, 1], got {smoothing!r}")
    values = None if weights is None else [float(w) for w in weights]
    if values is not None and not all(w > 0.0 for w in values):  # NaN fails too
        raise ValueError(f"{loss}: class weights must be positive, got {weights}")
    return (
        None if values is None else Tensor.from_data(values, device),
        None if smoothing is None else float(smoothing),
    )


def one_hot(indices: Tensor, num_classes: int, dtype: DType) -> Tensor:
    """Float one-hot rows ``[..., num_classes]`` of the (already checked) Int ``indices``."""
    classes = Tensor.arange(num_classes, device=indices.device, dtype=indices.dtype)
    classes = classes.reshape([1] * indices.rank + [num_classes])
    return indices.unsqueeze_dim(-1).equal(classes).float(dtype)


def constant_like(values: Tensor, like: Tensor) -> Tensor:
    """The constant tensor ``values`` on the device and with the float dtype of ``like``.

    Losses hold their constants (class weights) on the device given to ``init``; this moves them where
    the inputs are (an evaluation copy of a model runs on the inner backend, say) and to their dtype.
    """
    if values.device == like.device and values.dtype == like.dtype:
        return values
    return Tensor.from_data(values.to_data(), like.device, like.dtype)
