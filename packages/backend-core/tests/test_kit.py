"""``burn_backend.kit``: the backend author's helpers live there, and not in the user-facing namespaces."""

from __future__ import annotations

import inspect

import burn_backend
import burn_backend.module
from burn_backend import ConvOptions, Tensor, kit
from burn_backend.module import avg_pool2d, conv2d


def test_backend_author_helpers_left_the_user_namespaces() -> None:
    for namespace in (burn_backend, burn_backend.module):
        leaked = set(kit.__all__) & (set(namespace.__all__) | set(dir(namespace)))
        assert not leaked, f"{namespace.__name__} holds backend-author helpers {sorted(leaked)}"


def test_kit_is_documented_for_backend_authors() -> None:
    assert kit.__doc__ is not None
    assert "backend author" in kit.__doc__
    for name in kit.__all__:
        value = getattr(kit, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert inspect.getdoc(value), f"kit.{name} has no docstring"


def test_sizes_agree_with_the_module_functions() -> None:
    x = Tensor.zeros([1, 2, 9, 7])
    weight = Tensor.zeros([3, 2, 3, 2])
    out = conv2d(x, weight, options=ConvOptions(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=1))
    height = kit.conv_output_size(9, kernel=3, stride=2, padding=1, dilation=1)
    width = kit.conv_output_size(7, kernel=2, stride=1, padding=0, dilation=2)
    assert out.dims() == [1, 3, height, width]
    pooled = avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)
    size = kit.pool_output_size(9, kernel=3, stride=2, padding=1, dilation=1, ceil_mode=True)
    assert pooled.dims()[2] == size


def test_interface_listing_and_entry_point_group() -> None:
    methods = kit.interface_methods()
    assert methods["float_add"] is burn_backend.FloatTensorOps.float_add
    assert {"device_count", "seed", "sync"} <= set(methods)
    assert kit.ENTRY_POINT_GROUP == "burn.backends"
