"""A PyTorch spelling that Burn names differently is an error naming Burn's method: names ``Tensor``
lacks (``view``, ``size``, ``cuda``, in-place ``add_``...) and existing methods called with PyTorch's
arguments (``sum(1)``, ``argmax()``, ``transpose(0, 1)``...)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from burn_backend import Device, Tensor

CASES: dict[str, tuple[Callable[[Any], Any], str]] = {
    "sum(dim)": (
        lambda x: x.sum(1),
        r"Tensor.sum\(\) takes no dim: use sum_dim\(1\) "
        r"\(keeps the dim, like torch.sum\(x, 1, keepdim=True\)\)",
    ),
    "sum(dim=)": (lambda x: x.sum(dim=0), r"use sum_dim\(0\)"),
    "mean(dim)": (lambda x: x.mean(-1), r"use mean_dim\(-1\)"),
    "prod(dim)": (lambda x: x.prod(0), r"use prod_dim\(0\)"),
    "max(dim)": (lambda x: x.max(1), r"use max_dim\(1\) .*max_dim_with_indices\(1\)"),
    "max(other)": (lambda x: x.max(x), r"max_pair\(other\) for torch.maximum"),
    "min(dim)": (lambda x: x.min(0), r"use min_dim\(0\)"),
    "any(dim)": (lambda x: x.any(0), r"use any_dim\(0\)"),
    "all(dim)": (lambda x: x.all(1), r"use all_dim\(1\)"),
    "argmax()": (lambda x: x.argmax(), r"argmax\(dim\) needs a dim"),
    "argmin()": (lambda x: x.argmin(), r"argmin\(dim\) needs a dim"),
    "var()": (lambda x: x.var(), r"var\(dim\) needs a dim"),
    "std()": (lambda x: x.std(), r"std\(dim\) needs a dim"),
    "transpose(d0, d1)": (lambda x: x.transpose(0, 1), r"use swap_dims\(0, 1\)"),
    "split([sizes])": (lambda x: x.split([1, 1]), r"use split_with_sizes\(\[1, 1\], dim\)"),
    "view": (lambda x: x.view(4), r"Tensor.view\(\) is PyTorch's spelling: use reshape"),
    "size": (lambda x: x.size(), r"shape property or dims\(\)"),
    "numel": (lambda x: x.numel(), r"num_elements\(\)"),
    "cuda": (lambda x: x.cuda(), r"to_device"),
    "to": (lambda x: x.to("cpu"), r"to_device\(device\) to move, cast\(dtype\)"),
    "masked_fill": (lambda x: x.masked_fill(x > 0, 0.0), r"mask_fill"),
    "maximum": (lambda x: x.maximum(x), r"max_pair"),
    "unsqueeze(dim)": (
        lambda x: x.unsqueeze(0),
        r"Tensor.unsqueeze\(dim\) is PyTorch's spelling: use unsqueeze_dim\(0\) .*unsqueeze\(rank=n\)",
    ),
    "unsqueeze(-1)": (lambda x: x.unsqueeze(-1), r"use unsqueeze_dim\(-1\)"),
    "unsqueeze(dim=)": (lambda x: x.unsqueeze(dim=1), r"use unsqueeze_dim\(1\)"),
    "clamp(min=)": (
        lambda x: x.clamp(min=0),
        r"Tensor.clamp\(min=0\) is PyTorch's spelling: use clamp_min\(0\); Burn's clamp takes both",
    ),
    "clamp(max=)": (lambda x: x.clamp(max=1.5), r"Tensor.clamp\(max=1.5\) .* use clamp_max\(1.5\)"),
    "clamp(min=, max=)": (
        lambda x: x.clamp(min=0, max=1),
        r"Tensor.clamp\(min=0, max=1\) .* use clamp\(0, 1\) \(both bounds, positional\)",
    ),
    "clamp(one bound)": (lambda x: x.clamp(0.5), r"Tensor.clamp\(0.5\) .* use clamp_min\(0.5\)"),
    "clamp(None, max)": (lambda x: x.clamp(None, 2), r"Tensor.clamp\(None, 2\) .* use clamp_max\(2\)"),
    "clamp(lo, max=)": (lambda x: x.clamp(0, max=2), r"Tensor.clamp\(0, max=2\) .* use clamp\(0, 2\)"),
    "add_": (lambda x: x.add_(1.0), r"Tensor.add_\(\): tensors are immutable.* use add\(...\)"),
    "mul_": (lambda x: x.mul_(2.0), r"use mul\(...\)"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_pytorch_spelling_names_burns_method(device: Device, case: str) -> None:
    x = Tensor.ones([2, 2], device)
    call, message = CASES[case]
    with pytest.raises(TypeError, match=message):
        call(x)


def test_spelling_errors_are_attribute_errors_too(device: Device) -> None:
    x = Tensor.ones([2], device)
    assert not hasattr(x, "view")
    assert not hasattr(x, "no_such_method")
    with pytest.raises(AttributeError, match="'Tensor' object has no attribute 'no_such_method'"):
        getattr(x, "no_such_method")  # noqa: B009
    with pytest.raises(AttributeError):
        getattr(x, "view")  # noqa: B009


def test_spellings_are_not_offered_as_names(device: Device) -> None:
    # the spellings are class attributes whose read raises: not listed, and raising on the class too
    x = Tensor.ones([2], device)
    names = dir(x)
    assert {"reshape", "add"} <= set(names)
    assert not {"view", "size", "add_", "mul_", "cuda"} & set(names)
    assert not hasattr(Tensor, "view")
    with pytest.raises(TypeError, match=r"Tensor.view\(\) is PyTorch's spelling: use reshape"):
        getattr(Tensor, "view")  # noqa: B009


def test_burn_spellings_still_work(device: Device) -> None:
    x = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], device)
    assert x.sum().tolist() == [10.0]
    assert x.argmax(1).tolist() == [[1], [1]]
    assert x.transpose().tolist() == [[1.0, 3.0], [2.0, 4.0]]
    assert [p.dims() for p in x.split(1)] == [[1, 2], [1, 2]]
    assert x.unsqueeze().dims() == [1, 2, 2]
    assert x.unsqueeze(rank=4).dims() == [1, 1, 2, 2]
    assert x.clamp(1.5, 3.0).tolist() == [[1.5, 2.0], [3.0, 3.0]]


def test_several_dims_name_the_dims_reductions(device: Device) -> None:
    x = Tensor.ones([2, 2], device)
    with pytest.raises(TypeError, match=r"Tensor.mean\(\) takes no dims: use mean_dims\(\[0, 1\]\)"):
        x.mean(dim=(0, 1))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"use max_dims\(\[1\]\) .*torch.amax"):
        x.max([1])  # type: ignore[arg-type]
