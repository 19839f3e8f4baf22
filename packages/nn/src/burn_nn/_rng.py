"""Records of random generators: a device's generator (what dropout masks and random initializers draw
from) and NumPy generators (data shuffling), so that a resumed run draws what an uninterrupted one
would have drawn.

A NumPy generator's state is a small dict of counters. CuPy's generators (cuRAND's XORWOW, MRG32k3a,
Philox) keep one state per GPU thread in device memory, about 13 MB on an H100; their record holds
those bytes as a ``uint8`` array (which any recorder stores as a tensor, outside its structure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from burn_backend import Device

__all__ = ["RngRecord", "load_rng_record", "rng_record"]

RngRecord = dict[str, Any]
"""A generator's state as plain data: NumPy's ``bit_generator.state`` (arrays as lists of ints; its
counters may exceed 64 bits, which burn-record keeps whole), or for a CuPy generator its kind and its
device states' bytes."""

_CUPY_PREFIX = "cupy."


def _generator(source: Any, where: str) -> Any:
    """The NumPy-compatible generator behind ``source``: a device's (through any decorators), or
    ``source`` itself."""
    if isinstance(source, np.random.BitGenerator):
        return source
    if isinstance(source, Device):
        device, backend = source, source.backend
        while hasattr(backend, "inner_device"):  # Autodiff, Fusion, Router: the generator is the inner's
            device = backend.inner_device(device)
            backend = device.backend
        generator_of = getattr(backend, "generator", None)
        if generator_of is None:
            raise TypeError(f"{where}: the backend of {source} has no random generator to record")
        source = generator_of(device)
    bit_generator = getattr(source, "bit_generator", None)
    if not isinstance(getattr(bit_generator, "state", None), dict) and _device_states(bit_generator) is None:
        raise TypeError(
            f"{where}: {type(source).__name__} has no NumPy bit_generator state; records cover NumPy "
            "generators, CuPy's cuRAND generators and devices whose backend draws from either"
        )
    return bit_generator


def _device_states(bit_generator: Any) -> Any:
    """The device array of a CuPy cuRAND bit generator's per-thread states, or ``None`` for any other
    generator (read through its ``_state`` buffer: CuPy has no public accessor)."""
    states = getattr(bit_generator, "_state", None)
    if hasattr(states, "__cuda_array_interface__") and callable(getattr(states, "get", None)):
        return states
    return None


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, np.ndarray):
        return [int(item) for item in value.reshape(-1)]
    if isinstance(value, np.generic):
        return value.item()
    return value


def rng_record(source: Device | np.random.Generator | np.random.BitGenerator) -> RngRecord:
    """The state of ``source``'s random generator, as a record any recorder saves.

    Args:
        source: a device (its backend's generator, through Autodiff and other decorators: NdArray's
            NumPy generator, Cuda's CuPy one) or a NumPy ``Generator`` / ``BitGenerator``.

    Raises:
        TypeError: ``source`` has neither a NumPy generator nor a CuPy cuRAND one.

    Example:
        >>> state = {"device": rng_record(device), "shuffle": rng_record(rng)}
        >>> NamedMpkFileRecorder().save(state, "checkpoint/rng")
    """
    bit_generator = _generator(source, "rng_record")
    states = _device_states(bit_generator)
    if states is not None:
        # (CuPy copies from the array's own GPU, whichever is current)
        return {
            "bit_generator": _CUPY_PREFIX + type(bit_generator).__name__,
            "state": states.get().view(np.uint8),
        }
    return _plain(bit_generator.state)  # type: ignore[no-any-return]


def load_rng_record(
    target: Device | np.random.Generator | np.random.BitGenerator, record: Mapping[str, Any]
) -> None:
    """Set ``target``'s random generator to the state ``rng_record`` saved, so that it draws next what
    the recorded one would have drawn.

    Raises:
        TypeError: ``target`` has neither a NumPy generator nor a CuPy cuRAND one.
        ValueError: ``record`` is not the state of a generator of the same kind (naming both), or, for
            a CuPy generator, not of the same size.

    Example:
        >>> load_rng_record(device, NamedMpkFileRecorder().load("checkpoint/rng")["device"])
    """
    bit_generator = _generator(target, "load_rng_record")
    states = _device_states(bit_generator)
    if states is not None:
        _load_device_states(bit_generator, states, record)
        return
    expected = bit_generator.state.get("bit_generator")
    if not isinstance(record, Mapping) or record.get("bit_generator") != expected:
        found = record.get("bit_generator") if isinstance(record, Mapping) else type(record).__name__
        raise ValueError(
            f"load_rng_record: the record holds a {found!r} state, the generator is {expected!r}"
        )
    try:
        bit_generator.state = dict(record)
    except (TypeError, ValueError, KeyError, OverflowError) as error:
        raise ValueError(f"load_rng_record: the record is not a valid {expected} state ({error})") from None


def _load_device_states(bit_generator: Any, states: Any, record: Mapping[str, Any]) -> None:
    """Copy a CuPy generator's recorded states back to its device, after checking their kind and size
    (the count of states follows the GPU's multiprocessors: another GPU model has another count)."""
    expected = _CUPY_PREFIX + type(bit_generator).__name__
    found = record.get("bit_generator") if isinstance(record, Mapping) else type(record).__name__
    if found != expected:
        raise ValueError(
            f"load_rng_record: the record holds a {found!r} state, the generator is {expected!r}"
        )
    saved = record.get("state")
    to_numpy = getattr(saved, "to_numpy", None)  # a recorder loads arrays as TensorData
    values = np.asarray(to_numpy() if callable(to_numpy) else saved)
    if values.dtype != np.uint8 or values.shape != (states.nbytes,):
        raise ValueError(
            f"load_rng_record: the {expected} record holds {values.dtype} values of shape {values.shape}, "
            f"the generator's states are {states.nbytes} bytes (uint8); states saved on a GPU with "
            "another number of multiprocessors do not fit"
        )
    states.view(np.uint8).set(values)
