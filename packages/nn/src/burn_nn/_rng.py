"""Records of random generators: a device's generator (what dropout masks and random initializers draw
from) and NumPy generators (data shuffling), so that a resumed run draws what an uninterrupted one
would have drawn."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from burn_backend import Device

__all__ = ["RngRecord", "load_rng_record", "rng_record"]

RngRecord = dict[str, Any]
"""A generator's state as plain data (NumPy's ``bit_generator.state``, arrays as lists of ints): the
name of the bit generator and its counters, which may exceed 64 bits (burn-record keeps them whole)."""


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
    if not isinstance(getattr(bit_generator, "state", None), dict):
        raise TypeError(
            f"{where}: {type(source).__name__} has no NumPy bit_generator state; records cover NumPy "
            "generators and devices whose backend draws from one (such as NdArray)"
        )
    return bit_generator


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
        source: a device (its backend's generator, through Autodiff and other decorators) or a NumPy
            ``Generator`` / ``BitGenerator``.

    Raises:
        TypeError: ``source`` has no NumPy-style generator (CuPy's generators are not recorded).

    Example:
        >>> state = {"device": rng_record(device), "shuffle": rng_record(rng)}
        >>> NamedMpkFileRecorder().save(state, "checkpoint/rng")
    """
    state = _generator(source, "rng_record").state
    return _plain(state)  # type: ignore[no-any-return]


def load_rng_record(
    target: Device | np.random.Generator | np.random.BitGenerator, record: Mapping[str, Any]
) -> None:
    """Set ``target``'s random generator to the state ``rng_record`` saved, so that it draws next what
    the recorded one would have drawn.

    Raises:
        TypeError: ``target`` has no NumPy-style generator.
        ValueError: ``record`` is not the state of a generator of the same kind (naming both).

    Example:
        >>> load_rng_record(device, NamedMpkFileRecorder().load("checkpoint/rng")["device"])
    """
    bit_generator = _generator(target, "load_rng_record")
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
