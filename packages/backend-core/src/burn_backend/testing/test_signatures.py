"""The backend implements the interface exactly: every method, with the interface's parameters."""

from __future__ import annotations

import inspect

import pytest

from burn_backend import Backend, Device
from burn_backend.testing import interface_methods
from burn_backend.testing._partial import stubbed_methods


def parameters(function: object) -> list[tuple[str, object]]:
    signature = inspect.signature(function)  # type: ignore[arg-type]
    return [(p.name, p.kind) for p in signature.parameters.values() if p.name != "self"]


@pytest.mark.parametrize("name", sorted(interface_methods()))
def test_method_has_the_interface_parameters(device: Device, name: str) -> None:
    backend = device.backend
    if name in stubbed_methods(backend):
        pytest.fail(f"{type(backend).__name__}.{name} is not implemented")
    implementation = getattr(type(backend), name)
    assert parameters(implementation) == parameters(interface_methods()[name]), (
        f"{type(backend).__name__}.{name}{inspect.signature(implementation)} differs from the interface's "
        f"{name}{inspect.signature(interface_methods()[name])}"
    )


def test_backend_implements_every_required_method(device: Device) -> None:
    assert isinstance(device.backend, Backend)
    assert not getattr(type(device.backend), "__abstractmethods__", set())
    missing = sorted(stubbed_methods(device.backend))
    assert not missing, (
        f"{type(device.backend).__name__} does not implement {len(missing)} methods: {missing}"
    )


def test_a_method_with_other_parameters_is_rejected(device: Device) -> None:
    class Drifted(type(device.backend)):  # type: ignore[misc]
        def float_add(self, left, right):  # type: ignore[no-untyped-def]
            return super().float_add(left, right)

    assert parameters(Drifted.float_add) != parameters(interface_methods()["float_add"])
