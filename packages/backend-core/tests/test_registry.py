"""The backend registry: device specs, the process default device, third-party backends."""

from __future__ import annotations

import importlib.metadata

import pytest

import burn_backend._registry as registry
from burn_backend import Device, default_device, parse_device, set_default_device
from burn_backend.kit import ENTRY_POINT_GROUP


@pytest.fixture(autouse=True)
def clean_registry(monkeypatch: pytest.MonkeyPatch):
    """Each test starts with no override and no BURN_DEVICE, and leaves the caches as it found them."""
    monkeypatch.delenv("BURN_DEVICE", raising=False)
    monkeypatch.setattr(registry, "_override", None)
    monkeypatch.setattr(registry, "_backends", dict(registry._backends))
    monkeypatch.setattr(registry, "_devices", dict(registry._devices))


def test_ndarray_is_registered_under_its_short_name() -> None:
    entry = registry.registered()["ndarray"]
    assert entry.group == ENTRY_POINT_GROUP
    assert entry.value == "burn_ndarray:NdArray"


def test_parse_device_names_backend_and_index() -> None:
    device = parse_device("ndarray")
    assert isinstance(device, Device)
    assert device.backend.name == "ndarray"
    assert device.index == 0
    assert str(device) == "ndarray:0"
    assert parse_device("ndarray:0") is device
    assert parse_device(str(device)) == device


def test_the_same_spec_gives_the_same_backend_object() -> None:
    assert parse_device("ndarray").backend is parse_device(" ndarray:0 ").backend


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no-such-backend", r"no installed backend is named 'backend'"),
        ("nothing", r"no installed backend is named 'nothing' \(installed: .*ndarray"),
        ("ndarray:x", r"the index 'x' is not an integer"),
        ("ndarray:3", r"ndarray: no device 3; this backend has 1 device"),
        (":1", r"expected 'backend\[:index\]'"),
    ],
)
def test_bad_specs_say_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_device(spec)


def test_default_is_the_first_cpu_backend() -> None:
    device = default_device()
    assert device.backend.is_cpu
    assert device == parse_device("ndarray")


def test_burn_device_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURN_DEVICE", "ndarray:0")
    assert default_device() == parse_device("ndarray")
    monkeypatch.setenv("BURN_DEVICE", "missing-backend")
    with pytest.raises(ValueError, match="no installed backend"):
        default_device()


def test_set_default_device_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURN_DEVICE", "missing-backend")
    set_default_device("ndarray")
    assert default_device() == parse_device("ndarray")
    set_default_device(None)
    with pytest.raises(ValueError, match="no installed backend"):
        default_device()


def test_a_third_party_backend_is_found_through_its_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    # A third party registers its class in the same group; here the entry point reuses NdArray's class
    # under another name, as an installed package's metadata would declare it.
    known = registry.registered()
    mine = importlib.metadata.EntryPoint("mybackend", "burn_ndarray:NdArray", ENTRY_POINT_GROUP)
    monkeypatch.setattr(registry, "registered", lambda: {**known, "mybackend": mine})
    device = parse_device("mybackend:0")
    assert type(device.backend).__name__ == "NdArray"
    assert str(device.backend.device(0)) == "ndarray:0"


def test_no_cpu_backend_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "registered", dict)
    with pytest.raises(RuntimeError, match="no CPU backend is installed"):
        default_device()
