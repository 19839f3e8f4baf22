"""The wire format: msgpack frames whose backend values are msgpack ext types, tensors as raw bytes.

A frame is a msgpack array. Plain values (ints, floats, bools, None, strings, lists) are msgpack's own;
the backend's values are ext types of this module (``HANDLE`` ... ``TENSOR``); a tensor's values follow
its ``TENSOR`` header as one msgpack ``bin``, the array's bytes in C order, little-endian, never a list.
A tensor over ``INLINE_BYTES`` travels out of band instead: its header says its byte count, a ``nil``
takes the place of the ``bin``, and its bytes follow the frame as binary WebSocket messages of at most
``CHUNK_BYTES`` each, in the order of the headers (one large message costs several copies of its whole
size on each side; chunks of 1 MiB move several times faster).
Decoding builds nothing but these values: an unknown ext code, dtype, options class or enum value is a
``ProtocolError``.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable
from typing import Any

import msgpack
import numpy as np

from burn_backend import Device, DType, TensorData

from ._errors import ProtocolError
from ._protocol import ENUM_CLASSES, OPTION_CLASSES

HANDLE, DTYPE, DEVICE, SLICE, OPTIONS, ENUM, TENSOR = range(1, 8)
INLINE_BYTES = 1 << 20
"""The largest tensor whose bytes travel inside its frame."""
CHUNK_BYTES = 1 << 20
"""The size of the messages that carry a larger tensor's bytes."""
"""The ext type codes: a tensor handle (its id, 8 bytes little-endian), a dtype (its name), a device (its
index), a slice ``[start, stop, step]``, options ``[class name, [fields]]``, an enum ``[class name,
value]`` and a tensor's header ``[dtype, shape]`` (its bytes follow as the next ``bin``)."""


class Handle:
    """A tensor handle as the server decodes it: the id the client gave the tensor."""

    __slots__ = ("id",)

    def __init__(self, id: int) -> None:
        self.id = id

    def __repr__(self) -> str:
        return f"Handle({self.id})"


class DeviceIndex:
    """A device as the server decodes it: the index of one of the server backend's devices."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


class TensorHead:
    """A tensor header as decoded: the dtype and shape of the bytes that follow it."""

    __slots__ = ("body", "dtype", "nbytes", "shape")

    def __init__(self, dtype: DType, shape: tuple[int, ...], nbytes: int) -> None:
        self.dtype = dtype
        self.shape = shape
        self.nbytes = nbytes
        self.body: np.ndarray[Any, Any] | None = None  # the bytes that followed out of band


_DTYPES = {dtype.value: dtype for dtype in DType}
_PLAIN = (int, float, bool, str, type(None))


def _pack_inner(value: Any) -> bytes:
    return msgpack.packb(value, default=_default_inner)  # type: ignore[no-any-return]


def _default_inner(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return msgpack.ExtType(ENUM, _pack_inner([type(value).__name__, value.value]))
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"remote: a value of type {type(value).__name__} cannot travel")


def tensor_fields(data: TensorData, bodies: list[Any] | None = None) -> list[Any]:
    """The wire form of ``data``: its header ext and its bytes (a view, not a copy, where C-ordered);
    over ``INLINE_BYTES``, the header and ``None``, and the bytes go to ``bodies`` to send after the frame
    (where ``bodies`` is given)."""
    array = data.to_numpy()
    if array.dtype.byteorder == ">":
        array = array.astype(array.dtype.newbyteorder("<"))
    if not array.flags.c_contiguous:
        array = array.copy(order="C")  # not ascontiguousarray: it makes a 0-d array 1-d
    raw = array.reshape(-1).view(np.uint8).data if array.size else b""
    if bodies is not None and array.nbytes > INLINE_BYTES:
        bodies.append(raw)
        return [
            msgpack.ExtType(TENSOR, _pack_inner([data.dtype.value, list(array.shape), array.nbytes])),
            None,
        ]
    return [msgpack.ExtType(TENSOR, _pack_inner([data.dtype.value, list(array.shape)])), raw]


def make_default(handle_type: type[Any], bodies: list[Any] | None = None) -> Callable[[Any], Any]:
    """The msgpack ``default`` hook of a sender whose handles are of ``handle_type`` (their ``id``); the
    bytes of large tensors go to ``bodies`` (``tensor_fields``)."""
    to_bytes = int.to_bytes

    def default(value: Any) -> Any:
        if type(value) is handle_type:
            return msgpack.ExtType(HANDLE, to_bytes(value.id, 8, "little"))
        if isinstance(value, DType):
            return msgpack.ExtType(DTYPE, value.value.encode())
        if isinstance(value, Device):
            return msgpack.ExtType(DEVICE, _pack_inner(value.index))
        if isinstance(value, slice):
            return msgpack.ExtType(SLICE, _pack_inner([value.start, value.stop, value.step]))
        if isinstance(value, TensorData):
            return tensor_fields(value, bodies)
        if isinstance(value, enum.Enum):
            return msgpack.ExtType(ENUM, _pack_inner([type(value).__name__, value.value]))
        if dataclasses.is_dataclass(value) and type(value).__name__ in OPTION_CLASSES:
            fields = [getattr(value, f.name) for f in dataclasses.fields(value)]
            return msgpack.ExtType(OPTIONS, _pack_inner([type(value).__name__, fields]))
        if isinstance(value, np.generic):
            return value.item()
        raise TypeError(f"remote: a value of type {type(value).__name__} cannot travel")

    return default


def _unpack_inner(data: bytes) -> Any:
    return msgpack.unpackb(data, ext_hook=_ext_hook_inner, use_list=True, raw=False)


def _ext_hook_inner(code: int, data: bytes) -> Any:
    if code == ENUM:
        return _enum(_unpack_inner(data))
    raise ProtocolError(f"ext type {code} where an options field was expected")


def _enum(fields: Any) -> enum.Enum:
    if not (isinstance(fields, list) and len(fields) == 2 and isinstance(fields[0], str)):
        raise ProtocolError("a malformed enum value")
    cls = ENUM_CLASSES.get(fields[0])
    if cls is None:
        raise ProtocolError(f"unknown enum {fields[0][:40]!r}")
    try:
        return cls(fields[1])
    except ValueError:
        raise ProtocolError(f"{fields[0]} has no value {fields[1]!r:.40}") from None


def _option_field(value: Any) -> Any:
    if isinstance(value, list):
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            raise ProtocolError("an options field holds a list of non-numbers")
        return tuple(value)
    if isinstance(value, (*_PLAIN, enum.Enum)):
        return value
    raise ProtocolError(f"an options field of type {type(value).__name__}")


def _options(fields: Any) -> Any:
    if not (isinstance(fields, list) and len(fields) == 2 and isinstance(fields[0], str)):
        raise ProtocolError("malformed options")
    cls = OPTION_CLASSES.get(fields[0])
    if cls is None:
        raise ProtocolError(f"unknown options class {fields[0][:40]!r}")
    values = fields[1]
    declared = dataclasses.fields(cls)
    if not isinstance(values, list) or len(values) != len(declared):
        raise ProtocolError(f"{fields[0]} takes {len(declared)} fields")
    try:
        return cls(*(_option_field(v) for v in values))
    except ProtocolError:
        raise
    except Exception as error:  # the dataclass's own checks
        raise ProtocolError(f"{fields[0]}: {error}") from None


def _int_list(value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise ProtocolError(f"{what}: expected a list of ints")
    return value


def ext_hook(code: int, data: bytes, heads: list[TensorHead] | None = None) -> Any:
    """The msgpack ``ext_hook`` of both sides: the values of this module's ext types. The headers of
    tensors whose bytes follow out of band are appended to ``heads``.

    Raises:
        ProtocolError: an unknown code or a malformed value.
    """
    if code == HANDLE:
        if len(data) != 8:
            raise ProtocolError("a tensor handle must be 8 bytes")
        return Handle(int.from_bytes(data, "little"))
    if code == DTYPE:
        dtype = _DTYPES.get(data.decode("ascii", "replace"))
        if dtype is None:
            raise ProtocolError(f"unknown dtype {data[:20]!r}")
        return dtype
    if code == DEVICE:
        index = _unpack_inner(data)
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise ProtocolError("a device index must be a non-negative int")
        return DeviceIndex(index)
    if code == SLICE:
        fields = _unpack_inner(data)
        if not (
            isinstance(fields, list)
            and len(fields) == 3
            and all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in fields)
        ):
            raise ProtocolError("a slice must be [start, stop, step] of ints or None")
        return slice(*fields)
    if code == OPTIONS:
        return _options(_unpack_inner(data))
    if code == ENUM:
        return _enum(_unpack_inner(data))
    if code == TENSOR:
        fields = _unpack_inner(data)
        if not (isinstance(fields, list) and len(fields) in (2, 3)):
            raise ProtocolError("a tensor header must be [dtype, shape] or [dtype, shape, bytes]")
        dtype = _DTYPES.get(fields[0]) if isinstance(fields[0], str) else None
        if dtype is None:
            raise ProtocolError(f"unknown dtype {fields[0]!r:.20} in a tensor header")
        shape = _int_list(fields[1], "a tensor header's shape")
        if any(d < 0 for d in shape) or len(shape) > 64:
            raise ProtocolError(f"a tensor shape must be at most 64 non-negative dims, got {shape[:8]}")
        nbytes = math.prod(shape) * dtype.size
        head = TensorHead(dtype, tuple(shape), nbytes)
        if len(fields) == 3:
            if fields[2] != nbytes or heads is None:
                raise ProtocolError(
                    f"a tensor header of shape {shape[:8]} and {dtype} announces {fields[2]!r:.20} bytes"
                )
            heads.append(head)
        return head
    raise ProtocolError(f"unknown ext type {code}")


def receive_bodies(receive: Callable[[], Any], heads: list[TensorHead], limit: int) -> None:
    """Read the out-of-band bytes of ``heads`` (in order) from the messages ``receive`` returns.

    Raises:
        ProtocolError: a tensor over ``limit`` bytes (checked before allocating), a text message, or a
            message longer than what remains of its tensor.
    """
    for head in heads:
        if head.nbytes > limit:
            raise ProtocolError(
                f"a tensor of shape {list(head.shape)} and dtype {head.dtype} is {head.nbytes} bytes, "
                f"over the limit of {limit}"
            )
        body = np.empty(head.nbytes, np.uint8)
        filled = 0
        while filled < head.nbytes:
            chunk = receive()
            if not isinstance(chunk, bytes) or len(chunk) > head.nbytes - filled:
                raise ProtocolError(f"a tensor's bytes: expected at most {head.nbytes - filled} more bytes")
            body[filled : filled + len(chunk)] = np.frombuffer(chunk, np.uint8)
            filled += len(chunk)
        head.body = body


def send_bodies(send: Callable[[Any], None], bodies: list[Any]) -> None:
    """Send the out-of-band bytes ``tensor_fields`` collected, in chunks, and empty the list."""
    for body in bodies:
        view = memoryview(body).cast("B")
        for start in range(0, len(view), CHUNK_BYTES):
            send(view[start : start + CHUNK_BYTES])
    bodies.clear()


def tensor_data(value: Any, limit: int) -> TensorData:
    """The ``TensorData`` of a decoded tensor (``[TensorHead, bytes]``), its bytes viewed, not copied.

    Raises:
        ProtocolError: not a tensor, its byte count is not its shape's times its dtype's size, or it is
            over ``limit`` bytes.
    """
    if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], TensorHead)):
        raise ProtocolError("expected a tensor: [header, bytes]")
    head, raw = value
    if raw is None and head.body is not None:
        raw = head.body
    elif not isinstance(raw, bytes):
        raise ProtocolError("a tensor's values must be bytes")
    count = 1
    for dim in head.shape:
        count *= dim
    expected = count * head.dtype.size
    if expected > limit:
        raise ProtocolError(
            f"a tensor of shape {list(head.shape)} and dtype {head.dtype} is {expected} bytes, over the "
            f"limit of {limit}"
        )
    if len(raw) != expected:
        raise ProtocolError(
            f"a tensor of shape {list(head.shape)} and dtype {head.dtype} needs {expected} bytes, "
            f"got {len(raw)}"
        )
    numpy_dtype = head.dtype.numpy.newbyteorder("<")
    array = np.frombuffer(raw, dtype=numpy_dtype).reshape(head.shape)
    if array.dtype != head.dtype.numpy:  # a big-endian host
        array = array.astype(head.dtype.numpy)
    return TensorData.from_numpy(array, copy=False)


def pack(frame: Any, default: Callable[[Any], Any]) -> bytes:
    """The bytes of ``frame``."""
    return msgpack.packb(frame, default=default, use_bin_type=True)  # type: ignore[no-any-return]


def unpack(data: bytes | str, heads: list[TensorHead] | None = None) -> Any:
    """The frame in ``data``; the headers of tensors whose bytes follow out of band go to ``heads``.

    Raises:
        ProtocolError: not a binary message, or not msgpack of this format.
    """
    if not isinstance(data, bytes):
        raise ProtocolError("a text message; frames are binary")
    try:
        hook = ext_hook if heads is None else lambda code, ext: ext_hook(code, ext, heads)
        return msgpack.unpackb(data, ext_hook=hook, use_list=True, raw=False, strict_map_key=True)
    except ProtocolError:
        raise
    except Exception as error:  # msgpack's errors for truncated, extra or nested-too-deep data
        raise ProtocolError(f"not a msgpack frame: {type(error).__name__}: {error}"[:200]) from None
