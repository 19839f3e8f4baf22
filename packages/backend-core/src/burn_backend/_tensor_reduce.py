"""Reductions and sorting of ``Tensor``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, cast

from ._dtype import Kind
from ._tensor_hints import argument_error
from ._tensor_index import TensorIndexing

if TYPE_CHECKING:
    from ._tensor import Tensor


class TensorReductions(TensorIndexing):
    """Reductions and sorting."""

    __slots__ = ()

    # == reductions ================================================================================
    def _reduce(
        self, name: str, kinds: tuple[Kind, ...] = (Kind.FLOAT, Kind.INT), nonempty: bool = False
    ) -> Tensor:
        self._require_kind(name, *kinds)
        if nonempty and self.num_elements() == 0:
            raise ValueError(f"{name}: the tensor has no elements (shape {self.dims()})")
        return self._new(self._op(name)(self._primitive))

    def _reduce_dim(
        self, name: str, dim: int, kinds: tuple[Kind, ...] = (Kind.FLOAT, Kind.INT), nonempty: bool = False
    ) -> Tensor:
        self._require_kind(name, *kinds)
        dim = self._dim(name, dim)
        if nonempty and self._primitive.shape[dim] == 0:
            raise ValueError(f"{name}: dim {dim} is empty (shape {self.dims()})")
        return self._new(self._op(name)(self._primitive, dim))

    def sum(self, dim: None = None) -> Tensor:
        """The sum of all values, as a tensor of shape [1] (``torch.sum(x)`` without a dim; ``sum_dim``
        reduces one dim, ``sum_dims`` several).

        Raises:
            TypeError: given a dim (PyTorch's spelling): the message names Burn's method.
        """
        if dim is not None:
            raise argument_error("sum", dim)
        return self._reduce("sum")

    def sum_dim(self, dim: int) -> Tensor:
        """Sums along ``dim``, which is kept with size 1."""
        return self._reduce_dim("sum_dim", dim)

    def mean(self, dim: None = None) -> Tensor:
        """The mean of all values, shape [1] (floor division on Int tensors) (``torch.mean(x)`` without a dim;
        ``mean_dim`` reduces one dim, ``mean_dims`` several).

        Raises:
            TypeError: given a dim (PyTorch's spelling): the message names Burn's method.
        """
        if dim is not None:
            raise argument_error("mean", dim)
        return self._reduce("mean", nonempty=self.kind is Kind.INT)

    def mean_dim(self, dim: int) -> Tensor:
        """Means along ``dim``, kept with size 1."""
        return self._reduce_dim("mean_dim", dim)

    def prod(self, dim: None = None) -> Tensor:
        """The product of all values, shape [1] (``torch.prod(x)`` without a dim; ``prod_dim`` reduces one
        dim, ``prod_dims`` several).

        Raises:
            TypeError: given a dim (PyTorch's spelling): the message names Burn's method.
        """
        if dim is not None:
            raise argument_error("prod", dim)
        return self._reduce("prod")

    def prod_dim(self, dim: int) -> Tensor:
        """Products along ``dim``, kept with size 1."""
        return self._reduce_dim("prod_dim", dim)

    def max(self, dim: None = None) -> Tensor:
        """The largest value, shape [1] (``torch.max(x)``; ``max_dim``/``max_dims`` reduce dims, ``max_pair``
        is ``torch.maximum``).

        Raises:
            TypeError: given a dim (PyTorch's spelling): the message names Burn's method.
        """
        if dim is not None:
            raise argument_error("max", dim)
        return self._reduce("max", nonempty=True)

    def max_dim(self, dim: int) -> Tensor:
        """Maxima along ``dim``, kept with size 1."""
        return self._reduce_dim("max_dim", dim, nonempty=True)

    def max_dim_with_indices(self, dim: int) -> tuple[Tensor, Tensor]:
        """Maxima along ``dim`` and the (Int) indices of the first of each."""
        return self._extreme_with_indices("max_dim_with_indices", dim)

    def min(self, dim: None = None) -> Tensor:
        """The smallest value, shape [1] (``torch.min(x)``; ``min_dim``/``min_dims`` reduce dims, ``min_pair``
        is ``torch.minimum``).

        Raises:
            TypeError: given a dim (PyTorch's spelling): the message names Burn's method.
        """
        if dim is not None:
            raise argument_error("min", dim)
        return self._reduce("min", nonempty=True)

    def min_dim(self, dim: int) -> Tensor:
        """Minima along ``dim``, kept with size 1."""
        return self._reduce_dim("min_dim", dim, nonempty=True)

    def min_dim_with_indices(self, dim: int) -> tuple[Tensor, Tensor]:
        """Minima along ``dim`` and the (Int) indices of the first of each."""
        return self._extreme_with_indices("min_dim_with_indices", dim)

    def _extreme_with_indices(self, name: str, dim: int) -> tuple[Tensor, Tensor]:
        self._require_kind(name, Kind.FLOAT, Kind.INT)
        dim = self._dim(name, dim)
        if self._primitive.shape[dim] == 0:
            raise ValueError(f"{name}: dim {dim} is empty (shape {self.dims()})")
        values, indices = self._op(name)(self._primitive, dim)
        return self._new(values), self._new(indices)

    def max_abs(self) -> Tensor:
        """The largest absolute value, shape [1]."""
        return self._reduce("max_abs", nonempty=True)

    def max_abs_dim(self, dim: int) -> Tensor:
        """Largest absolute values along ``dim``."""
        return self._reduce_dim("max_abs_dim", dim, nonempty=True)

    def argmax(self, dim: int | None = None) -> Tensor:
        """Int indices of the first maximum along ``dim`` (kept with size 1; ``torch.argmax(x, dim,
        keepdim=True)``).

        Raises:
            TypeError: no dim (PyTorch's flat ``argmax()``): the message says what to use.
        """
        if dim is None:
            raise argument_error("argmax", None)
        return self._reduce_dim("argmax", dim, nonempty=True)

    def argmin(self, dim: int | None = None) -> Tensor:
        """Int indices of the first minimum along ``dim`` (kept with size 1; ``torch.argmin(x, dim,
        keepdim=True)``).

        Raises:
            TypeError: no dim (PyTorch's flat ``argmin()``): the message says what to use.
        """
        if dim is None:
            raise argument_error("argmin", None)
        return self._reduce_dim("argmin", dim, nonempty=True)

    def any(self, dim: None = None) -> Tensor:
        """Whether any value is non-zero (true), as a Bool tensor of shape [1] (``torch.any(x)`` without a
        dim; ``any_dim`` reduces one dim).

        Raises:
            TypeError: given a dim (PyTorch's spelling): the message names Burn's method.
        """
        if dim is not None:
            raise argument_error("any", dim)
        return self._reduce("any", (Kind.FLOAT, Kind.INT, Kind.BOOL))

    def any_dim(self, dim: int) -> Tensor:
        """Whether any value along ``dim`` is non-zero."""
        return self._reduce_dim("any_dim", dim, (Kind.FLOAT, Kind.INT, Kind.BOOL))

    def all(self, dim: None = None) -> Tensor:
        """Whether every value is non-zero (true), as a Bool tensor of shape [1] (``torch.all(x)`` without a
        dim; ``all_dim`` reduces one dim).

        Raises:
            TypeError: given a dim (PyTorch's spelling): the message names Burn's method.
        """
        if dim is not None:
            raise argument_error("all", dim)
        return self._reduce("all", (Kind.FLOAT, Kind.INT, Kind.BOOL))

    def all_dim(self, dim: int) -> Tensor:
        """Whether every value along ``dim`` is non-zero."""
        return self._reduce_dim("all_dim", dim, (Kind.FLOAT, Kind.INT, Kind.BOOL))

    def cumsum(self, dim: int) -> Tensor:
        """Running sums along ``dim``."""
        return self._reduce_dim("cumsum", dim)

    def cumprod(self, dim: int) -> Tensor:
        """Running products along ``dim``."""
        return self._reduce_dim("cumprod", dim)

    def cummin(self, dim: int) -> Tensor:
        """Running minima along ``dim``."""
        return self._reduce_dim("cummin", dim)

    def cummax(self, dim: int) -> Tensor:
        """Running maxima along ``dim``."""
        return self._reduce_dim("cummax", dim)

    def var(self, dim: int | None = None) -> Tensor:
        """Unbiased variance (divided by n - 1) along ``dim``, kept with size 1 (``torch.var(x, dim,
        keepdim=True)``).

        Raises:
            TypeError: no dim (PyTorch's ``var()`` of all values): the message says what to use.
        """
        if dim is None:
            raise argument_error("var", None)
        return self.var_mean(dim)[0]

    def var_bias(self, dim: int) -> Tensor:
        """Biased variance (divided by n) along ``dim``, kept with size 1."""
        return self.var_mean_bias(dim)[0]

    def var_mean(self, dim: int) -> tuple[Tensor, Tensor]:
        """Unbiased variance and mean along ``dim``."""
        self._require_kind("var", Kind.FLOAT)
        dim = self._dim("var", dim)
        count = self._primitive.shape[dim]
        mean = self.mean_dim(dim)
        centered = self.sub(mean)
        return centered.mul(centered).sum_dim(dim).div_scalar(max(count - 1, 0) or math.nan), mean

    def var_mean_bias(self, dim: int) -> tuple[Tensor, Tensor]:
        """Biased variance and mean along ``dim``."""
        self._require_kind("var_bias", Kind.FLOAT)
        mean = self.mean_dim(dim)
        centered = self.sub(mean)
        return centered.mul(centered).mean_dim(dim), mean

    # == sorting ===================================================================================
    def sort(self, dim: int = -1, descending: bool = False) -> Tensor:
        """Values sorted along ``dim`` (stable)."""
        self._require_kind("sort", Kind.FLOAT, Kind.INT)
        return self._new(self._op("sort")(self._primitive, self._dim("sort", dim), descending))

    def sort_descending(self, dim: int = -1) -> Tensor:
        """Values sorted along ``dim`` in descending order (stable)."""
        return self.sort(dim, descending=True)

    def sort_with_indices(self, dim: int = -1, descending: bool = False) -> tuple[Tensor, Tensor]:
        """Sorted values and the Int indices they came from."""
        self._require_kind("sort_with_indices", Kind.FLOAT, Kind.INT)
        values, indices = self._op("sort_with_indices")(self._primitive, self._dim("sort", dim), descending)
        return self._new(values), self._new(indices)

    def argsort(self, dim: int = -1, descending: bool = False) -> Tensor:
        """Int indices that sort the values along ``dim`` (stable)."""
        self._require_kind("argsort", Kind.FLOAT, Kind.INT)
        return self._new(self._op("argsort")(self._primitive, self._dim("argsort", dim), descending))

    def _check_k(self, op: str, k: int, dim: int) -> int:
        dim = self._dim(op, dim)
        if not 0 <= k <= self._primitive.shape[dim]:
            raise ValueError(f"{op}: k={k} is outside [0, {self._primitive.shape[dim]}] for dim {dim}")
        return dim

    def topk(self, k: int, dim: int = -1) -> Tensor:
        """The ``k`` largest values along ``dim``, in descending order."""
        self._require_kind("topk", Kind.FLOAT, Kind.INT)
        dim = self._check_k("topk", k, dim)
        return self._new(self._op("topk")(self._primitive, dim, k))

    def topk_with_indices(self, k: int, dim: int = -1) -> tuple[Tensor, Tensor]:
        """The ``k`` largest values along ``dim`` and their Int indices."""
        self._require_kind("topk_with_indices", Kind.FLOAT, Kind.INT)
        dim = self._check_k("topk_with_indices", k, dim)
        values, indices = self._op("topk_with_indices")(self._primitive, dim, k)
        return self._new(values), self._new(indices)

    def argtopk(self, k: int, dim: int = -1) -> Tensor:
        """Int indices of the ``k`` largest values along ``dim``."""
        self._require_kind("argtopk", Kind.FLOAT, Kind.INT)
        dim = self._check_k("argtopk", k, dim)
        return self._new(self._op("argtopk")(self._primitive, dim, k))

    # == several dims at once ======================================================================
    def _reduce_dims(self, op: str, dims: Sequence[int] | int, per_dim: str) -> Tensor:
        dims = [dims] if isinstance(dims, int) else list(dims)
        self._require_kind(op, Kind.FLOAT, Kind.INT)
        positions = self._dims(op, dims)
        if not positions and per_dim == "max_abs_dim":
            return self.abs()  # over no dims: each value's own absolute value
        result = cast("Tensor", self)
        for dim in positions:
            result = getattr(result, per_dim)(dim)
        return result

    def sum_dims(self, dims: Sequence[int]) -> Tensor:
        """Sums over each dim of ``dims``, each kept with size 1 (Burn's ``sum_dims``; PyTorch's
        ``torch.sum(x, dims, keepdim=True)``, NumPy's ``x.sum(axis=dims, keepdims=True)``).

        Example:
            >>> Tensor.ones([2, 3, 4]).sum_dims([0, 2]).dims()
            [1, 3, 1]
        """
        return self._reduce_dims("sum_dims", dims, "sum_dim")

    def sum_dims_squeeze(self, dims: Sequence[int]) -> Tensor:
        """Sums over ``dims``, which are removed (Burn's ``sum_dims_squeeze``; ``torch.sum(x, dims)``).

        Example:
            >>> Tensor.ones([2, 3, 4]).sum_dims_squeeze([0, 2]).dims()
            [3]
        """
        positions = self._dims("sum_dims_squeeze", [dims] if isinstance(dims, int) else dims)
        return self.sum_dims(positions).squeeze_dims(positions)

    def mean_dims(self, dims: Sequence[int]) -> Tensor:
        """Means over ``dims``, each kept with size 1 (Burn's ``mean_dims``; ``torch.mean(x, dims,
        keepdim=True)``).

        Example:
            >>> Tensor.from_data([[1.0, 2.0], [3.0, 6.0]]).mean_dims([0, 1]).tolist()
            [[3.0]]
        """
        return self._reduce_dims("mean_dims", dims, "mean_dim")

    def prod_dims(self, dims: Sequence[int]) -> Tensor:
        """Products over ``dims``, each kept with size 1 (Burn's ``prod_dims``).

        Example:
            >>> Tensor.from_data([[1, 2], [3, 4]]).prod_dims([0, 1]).tolist()
            [[24]]
        """
        return self._reduce_dims("prod_dims", dims, "prod_dim")

    def max_dims(self, dims: Sequence[int]) -> Tensor:
        """Maxima over ``dims``, each kept with size 1 (Burn's ``max_dims``; ``torch.amax(x, dims,
        keepdim=True)``).

        Example:
            >>> Tensor.from_data([[1, 5], [3, 4]]).max_dims([0, 1]).tolist()
            [[5]]
        """
        return self._reduce_dims("max_dims", dims, "max_dim")

    def min_dims(self, dims: Sequence[int]) -> Tensor:
        """Minima over ``dims``, each kept with size 1 (Burn's ``min_dims``; ``torch.amin(x, dims,
        keepdim=True)``).

        Example:
            >>> Tensor.from_data([[1, 5], [3, 4]]).min_dims([0, 1]).tolist()
            [[1]]
        """
        return self._reduce_dims("min_dims", dims, "min_dim")

    def max_abs_dims(self, dims: Sequence[int]) -> Tensor:
        """Largest absolute values over ``dims``, each kept with size 1 (Burn's ``max_abs_dims``).

        Example:
            >>> Tensor.from_data([[1, -5], [3, 4]]).max_abs_dims([0, 1]).tolist()
            [[5]]
        """
        return self._reduce_dims("max_abs_dims", dims, "max_abs_dim")

    # == statistics ================================================================================
    def logsumexp(self, dim: int) -> Tensor:
        """``log(sum(exp(x)))`` along ``dim``, kept with size 1, computed without overflow
        (``torch.logsumexp(x, dim, keepdim=True)``, ``scipy.special.logsumexp``); Float only.

        Rows of ``-inf`` give ``-inf``; a ``+inf`` gives ``+inf``. The gradient is the softmax along
        ``dim``.

        Example:
            >>> round(Tensor.from_data([[0.0, 0.0]]).logsumexp(1).item(), 4)
            0.6931
        """
        self._require_kind("logsumexp", Kind.FLOAT)
        dim = self._dim("logsumexp", dim)
        if self._primitive.shape[dim] == 0:
            return self.sum_dim(dim).add_scalar(-math.inf)
        peak = self.max_dim(dim).detach()
        peak = peak.mask_fill(peak.is_inf(), 0.0)  # an infinite peak would make inf - inf = NaN
        return self.sub(peak).exp().sum_dim(dim).log().add(peak)

    def std(self, dim: int | None = None) -> Tensor:
        """Unbiased standard deviation (divided by n - 1, as ``var``) along ``dim``, kept with size 1
        (``torch.std(x, dim, keepdim=True)``; NumPy's ``np.std(x, dim, ddof=1, keepdims=True)``);
        Float only.

        Raises:
            TypeError: no dim (PyTorch's ``std()`` of all values): the message says what to use.

        Example:
            >>> Tensor.from_data([[1.0, 3.0]]).std(1).tolist()
            [[1.4142135381698608]]
        """
        if dim is None:
            raise argument_error("std", None)
        self._require_kind("std", Kind.FLOAT)
        return self.var(dim).sqrt()

    def std_bias(self, dim: int) -> Tensor:
        """Biased standard deviation (divided by n, as ``var_bias``) along ``dim``, kept with size 1
        (``torch.std(x, dim, correction=0, keepdim=True)``, ``np.std(x, dim, keepdims=True)``).

        Example:
            >>> Tensor.from_data([[1.0, 3.0]]).std_bias(1).tolist()
            [[1.0]]
        """
        self._require_kind("std_bias", Kind.FLOAT)
        return self.var_bias(dim).sqrt()

    # == order statistics ==========================================================================
    def _order_statistic(self, op: str, dim: int, position: int) -> tuple[Tensor, Tensor]:
        """The values at ``position`` of the ascending sort along ``dim`` and their indices; the values
        are gathered from this tensor, so gradients flow back to the positions picked."""
        self._require_kind(op, Kind.FLOAT, Kind.INT)
        order = self.argsort(dim)
        indices = order.narrow(dim, position, 1)
        return cast("Tensor", self).gather(dim, indices), indices

    def _propagate_nan(self, dim: int, values: Tensor, indices: Tensor) -> tuple[Tensor, Tensor]:
        """NaN (and the index of the first NaN) where a slice along ``dim`` holds a NaN, as PyTorch's
        ``median`` and ``quantile`` (sorting puts NaN last, where it would be missed)."""
        if self.kind is not Kind.FLOAT:
            return values, indices
        nan = self.is_nan()
        has_nan = nan.any_dim(dim)
        first = nan.int(indices.dtype).argmax(dim)
        return values.mask_fill(has_nan, math.nan), indices.mask_where(has_nan, first)

    def median(self, dim: int) -> Tensor:
        """Medians along ``dim``, kept with size 1 (Burn's ``median``; ``torch.median(x, dim,
        keepdim=True).values``). For an even count, the lower of the two middle values (as PyTorch;
        NumPy's ``np.median`` averages them: use ``quantile(0.5, dim)`` for that). A slice holding NaN
        gives NaN.

        Example:
            >>> Tensor.from_data([[1.0, 5.0, 3.0, 2.0]]).median(1).tolist()
            [[2.0]]
        """
        return self.median_with_indices(dim)[0]

    def median_with_indices(self, dim: int) -> tuple[Tensor, Tensor]:
        """Medians along ``dim`` (as ``median``) and their Int indices (Burn's ``median_with_indices``;
        ``torch.median(x, dim, keepdim=True)``).

        Example:
            >>> values, indices = Tensor.from_data([[1.0, 5.0, 3.0, 2.0]]).median_with_indices(1)
            >>> indices.tolist()
            [[3]]
        """
        dim = self._dim("median", dim)
        size = self._primitive.shape[dim]
        if size == 0:
            raise ValueError(f"median: dim {dim} is empty (shape {self.dims()})")
        values, indices = self._order_statistic("median", dim, (size - 1) // 2)
        return self._propagate_nan(dim, values, indices)

    def kthvalue(self, k: int, dim: int = -1) -> Tensor:
        """The ``k``-th smallest values (``k`` from 1) along ``dim``, kept with size 1
        (``torch.kthvalue(x, k, dim, keepdim=True).values``).

        Example:
            >>> Tensor.from_data([[4, 1, 3]]).kthvalue(2).tolist()
            [[3]]
        """
        return self.kthvalue_with_indices(k, dim)[0]

    def kthvalue_with_indices(self, k: int, dim: int = -1) -> tuple[Tensor, Tensor]:
        """The ``k``-th smallest values along ``dim`` (as ``kthvalue``) and their Int indices
        (``torch.kthvalue(x, k, dim, keepdim=True)``).

        Raises:
            ValueError: ``k`` is not in ``[1, size]`` of ``dim``.

        Example:
            >>> Tensor.from_data([[4, 1, 3]]).kthvalue_with_indices(2)[1].tolist()
            [[2]]
        """
        dim = self._dim("kthvalue", dim)
        size = self._primitive.shape[dim]
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= size:
            raise ValueError(f"kthvalue: k={k!r} is outside [1, {size}] for dim {dim} of {self.dims()}")
        return self._order_statistic("kthvalue", dim, k - 1)

    def quantile(
        self,
        q: float | Sequence[float],
        dim: int,
        interpolation: Literal["linear", "lower", "higher", "nearest", "midpoint"] = "linear",
    ) -> Tensor:
        """The ``q``-th quantiles along ``dim`` (``torch.quantile``, ``np.quantile``); Float only.

        For one ``q`` the dim is kept with size 1 (``torch.quantile(x, q, dim, keepdim=True)``); for a
        sequence of ``k`` values the dim has size ``k``, one quantile each (PyTorch puts them in a new
        leading dim instead). Between two sorted values the ``interpolation`` picks ``"linear"`` (the
        default), the ``"lower"``, the ``"higher"``, the ``"nearest"`` (halves to even) or their
        ``"midpoint"``. A slice holding NaN gives NaN.

        Raises:
            ValueError: a ``q`` outside [0, 1], an empty dim or an unknown interpolation.

        Example:
            >>> Tensor.from_data([[1.0, 2.0, 3.0, 4.0]]).quantile(0.5, 1).tolist()
            [[2.5]]
        """
        self._require_kind("quantile", Kind.FLOAT)
        dim = self._dim("quantile", dim)
        levels = [q] if isinstance(q, (int, float)) else list(q)
        if not levels or any(isinstance(v, bool) or not 0.0 <= float(v) <= 1.0 for v in levels):
            raise ValueError(f"quantile: q must be in [0, 1], got {q!r}")
        if interpolation not in ("linear", "lower", "higher", "nearest", "midpoint"):
            raise ValueError(
                f"quantile: interpolation must be 'linear', 'lower', 'higher', 'nearest' or 'midpoint', "
                f"got {interpolation!r}"
            )
        size = self._primitive.shape[dim]
        if size == 0:
            raise ValueError(f"quantile: dim {dim} is empty (shape {self.dims()})")
        ordered = self.sort(dim)
        pieces = []
        for level in levels:
            position = float(level) * (size - 1)
            low, high = math.floor(position), math.ceil(position)
            weight = position - low
            if interpolation == "lower" or (interpolation == "nearest" and round(position) == low):
                weight = 0.0
            elif interpolation in ("higher", "nearest"):
                weight = 1.0
            elif interpolation == "midpoint":
                weight = 0.5 if high != low else 0.0
            below = ordered.narrow(dim, low, 1)
            if weight == 0.0 or high == low:
                pieces.append(below)
            elif weight == 1.0:
                pieces.append(ordered.narrow(dim, high, 1))
            else:
                pieces.append(below.lerp(ordered.narrow(dim, high, 1), weight))
        result = pieces[0] if len(pieces) == 1 else self._cls.cat(pieces, dim)
        return result.mask_fill(self.is_nan().any_dim(dim), math.nan)
