"""The pretty JSON format: one JSON document, readable and diffable, for small states.

The document is an object: ``"magic": "burn-record"``, ``"format": "pretty-json"``, ``"version"``, the
writing package and its version, the precision (``"precision"``, ``"float"``, ``"int"``), ``"crc32"`` and
``"record"``. In the record, dicts are objects (a key starting with ``$`` gets one more ``$``), lists are
arrays, and what JSON lacks is a one-key object: ``{"$tensor": {"dtype", "shape", "values"}}`` (values
flat, in C order; ``"nan"``, ``"inf"``, ``"-inf"`` for non-finite floats), ``{"$param": {"id", "dtype",
"shape", "values"}}``, ``{"$float": "nan"}`` and ``{"$bytes": "<base64>"}``. ``"crc32"`` is the CRC-32
of the record written compactly (``json.dumps(record, separators=(",", ":"))``), so that editing a
value is detected while re-indenting is not.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from burn_backend import DType, Kind, ParamId, ParamRecord, TensorData

from . import _quantized
from ._errors import PrecisionError, RecordFileError, RecordLimits
from ._format import FORMAT_VERSION
from ._precision import PrecisionSettings, convert_checked, settings_named
from ._tree import BigInt, SavedTensor, TensorSlot, flatten, join
from ._version import __version__

__all__ = ["FORMAT_NAME", "decode_json", "encode_json"]

FORMAT_NAME = "pretty-json"
_MAGIC = "burn-record"
_DTYPES = {dtype.value: dtype for dtype in DType}
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_TAGS = ("$tensor", "$param", "$float", "$bytes")


def _canonical(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()


def _float(value: float) -> Any:
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def _tensor_json(tensor: SavedTensor, settings: PrecisionSettings) -> dict[str, Any]:
    dtype = DType.of(tensor.array.dtype)
    dtype = dtype if tensor.exact else settings.stored_dtype(dtype)
    array = convert_checked(tensor.array, dtype, f"save: entry {join(tensor.path)!r}")
    values = array.reshape(-1).tolist()
    if dtype.kind is Kind.FLOAT and not np.isfinite(array).all():
        values = [_float(v) for v in values]
    body: dict[str, Any] = {"dtype": dtype.value, "shape": [int(d) for d in array.shape], "values": values}
    if tensor.param_id is not None:
        return {"$param": {"id": tensor.param_id.value, **body}}
    return {"$tensor": body}


def _convert(value: Any, tensors: list[SavedTensor], settings: PrecisionSettings) -> Any:
    """A skeleton value as JSON: tensors from ``tensors``, keys starting with ``$`` escaped, non-finite
    floats, big ints and bytes tagged. A module function, not a closure: a recursive closure refers to
    itself, and that cycle would keep the tensors' host copies alive until Python's cycle collector ran."""
    kind = type(value)
    if kind is dict:
        return {
            ("$" + key if key.startswith("$") else key): _convert(item, tensors, settings)
            for key, item in value.items()
        }
    if kind is list:
        return [_convert(item, tensors, settings) for item in value]
    if kind is TensorSlot:
        return _tensor_json(tensors[value.index], settings)
    if kind is BigInt:
        return value.value
    if kind is float and not math.isfinite(value):
        return {"$float": _float(value)}
    if kind is bytes:
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    return value


def encode_json(record: Mapping[str, Any], settings: PrecisionSettings, max_depth: int) -> str:
    """``record`` as a pretty JSON document.

    Raises:
        TypeError, ValueError: the record holds something a record cannot (see ``flatten``).
        PrecisionError: a tensor value does not fit ``settings``.
    """
    skeleton, tensors = flatten(record, max_depth)
    body = _convert(skeleton, tensors, settings)
    document = {
        "magic": _MAGIC,
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "package": "burn-record",
        "package_version": __version__,
        "precision": settings.name,
        "float": settings.float_dtype.value,
        "int": settings.int_dtype.value,
        "crc32": zlib.crc32(_canonical(body)),
        "record": body,
    }
    return _pretty(document, "") + "\n"


def _pretty(value: Any, indent: str) -> str:
    """Indented JSON whose arrays of plain values stay on one line."""
    inner = indent + "  "
    if isinstance(value, dict) and value:
        items = [
            f"{inner}{json.dumps(key, ensure_ascii=False)}: {_pretty(item, inner)}"
            for key, item in value.items()
        ]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list) and value and any(isinstance(item, (dict, list)) for item in value):
        return "[\n" + ",\n".join(inner + _pretty(item, inner) for item in value) + f"\n{indent}]"
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))


def _header(document: Any, source: Any) -> PrecisionSettings:
    if not isinstance(document, dict) or document.get("magic") != _MAGIC:
        found = document.get("magic") if isinstance(document, dict) else type(document).__name__
        raise RecordFileError(
            f"not a burn-record JSON record: its magic is {found!r:.40}, expected {_MAGIC!r}", source
        )
    writer = f"{document.get('package', '?')} {document.get('package_version', '?')}"
    if document.get("format") != FORMAT_NAME:
        raise RecordFileError(
            f"this is a {document.get('format')!r:.40} record (written by {writer:.60}), "
            f"expected {FORMAT_NAME!r}",
            source,
        )
    version = document.get("version")
    if type(version) is not int or not 1 <= version <= FORMAT_VERSION:
        raise RecordFileError(
            f"format version {version!r:.20} (written by {writer:.60}); this burn-record {__version__} reads "
            f"versions 1 to {FORMAT_VERSION}",
            source,
        )
    precision = document.get("precision")
    settings = settings_named(precision) if isinstance(precision, str) else None
    if settings is None or (document.get("float"), document.get("int")) != (
        settings.float_dtype.value,
        settings.int_dtype.value,
    ):
        raise RecordFileError(
            f"precision {document.get('precision')!r:.20} with float {document.get('float')!r:.10} and int "
            f"{document.get('int')!r:.10}, expected full (f32, i32), half (f16, i16) or double (f64, i64)",
            source,
        )
    if type(document.get("crc32")) is not int or "record" not in document:
        raise RecordFileError("the document has no int 'crc32' and 'record'", source)
    return settings


def _tensor(body: Any, param: bool, path: tuple[str, ...], limits: RecordLimits, source: Any) -> Any:
    keys = {"dtype", "shape", "values"} | ({"id"} if param else set())
    where = f"entry {join(path)!r}"
    if not isinstance(body, dict) or set(body) != keys:
        raise RecordFileError(f"{where}: a tensor needs exactly the fields {sorted(keys)}", source)
    dtype = _DTYPES.get(body["dtype"]) if isinstance(body["dtype"], str) else None
    shape, values = body["shape"], body["values"]
    if dtype is None:
        raise RecordFileError(
            f"{where}: dtype {body['dtype']!r:.40}, expected one of {list(_DTYPES)}", source
        )
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise RecordFileError(f"{where}: shape {shape!r:.60}, expected a list of ints >= 0", source)
    if len(shape) > limits.max_rank:
        raise RecordFileError(f"{where}: {len(shape)} dimensions, more than {limits.max_rank}", source)
    if not isinstance(values, list) or len(values) != math.prod(shape):
        count = len(values) if isinstance(values, list) else type(values).__name__
        raise RecordFileError(f"{where}: {count} values for shape {shape}", source)
    if dtype.kind is Kind.FLOAT:
        ok = all(type(v) in (int, float) or (type(v) is str and v in _NON_FINITE) for v in values)
        if ok:
            values = [_NON_FINITE[v] if type(v) is str else v for v in values]
    elif dtype.kind is Kind.INT:
        ok = all(type(v) is int for v in values)
    else:
        ok = all(type(v) is bool for v in values)
    if not ok:
        raise RecordFileError(f"{where}: values that are not all {dtype.kind.value}s", source)
    try:
        with np.errstate(all="raise"):
            array = np.array(values, dtype=dtype.numpy).reshape(shape)
    except (OverflowError, ValueError, FloatingPointError):
        raise RecordFileError(f"{where}: values out of the range of {dtype}", source) from None
    data = TensorData.from_numpy(array, copy=False)
    if not param:
        return data
    param_id = body["id"]
    if type(param_id) is not int or not 0 <= param_id < 1 << 64:
        raise RecordFileError(
            f"{where}: parameter id {param_id!r:.40}, expected an int from 0 to 2^64 - 1", source
        )
    return ParamRecord(ParamId(param_id), data)


def decode_json(
    text: bytes, settings: PrecisionSettings, limits: RecordLimits, source: Any
) -> dict[str, Any]:
    """The record in a pretty JSON document, converted to ``settings``.

    Raises:
        RecordFileError: not a burn-record JSON document, a damaged one, or one over ``limits``.
    """
    if len(text) > limits.max_structure_bytes:
        raise RecordFileError(
            f"a JSON record of {len(text)} bytes, more than {limits.max_structure_bytes} "
            "(RecordLimits.max_structure_bytes)",
            source,
        )
    containers = text.count(b"[") + text.count(b"{")  # an upper bound, counted before parsing
    if containers > limits.max_entries:
        raise RecordFileError(
            f"more than {limits.max_entries} lists and objects (RecordLimits.max_entries)", source
        )
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:  # JSONDecodeError, bad UTF-8, huge ints, deep nesting
        raise RecordFileError(f"not valid JSON ({str(error)[:120]})", source) from None
    _header(document, source)
    body = document["record"]
    try:
        canonical = _canonical(body)
    except (ValueError, RecursionError):
        raise RecordFileError("the record holds a non-finite number or is nested too deep", source) from None
    if zlib.crc32(canonical) != document["crc32"]:
        raise RecordFileError("the record's checksum does not match: the file was changed or damaged", source)
    count = 0
    exact: set[tuple[str, ...]] = set()  # the tensors of quantized entries: kept in their own dtype

    def decode(value: Any, path: tuple[str, ...]) -> Any:
        nonlocal count
        count += 1
        if count > limits.max_entries:
            raise RecordFileError(f"more than {limits.max_entries} values (RecordLimits.max_entries)", source)
        kind = type(value)
        if kind in (str, int, float, bool) or value is None:
            return value
        if len(path) > limits.max_depth:
            raise RecordFileError(
                f"entry {join(path[:8])}... is nested deeper than {limits.max_depth}", source
            )
        if kind is list:
            return [decode(item, (*path, str(index))) for index, item in enumerate(value)]
        if len(value) == 1 and next(iter(value)) in _TAGS:
            ((tag, body),) = value.items()
            if tag in ("$tensor", "$param"):
                loaded = _tensor(body, tag == "$param", path, limits, source)
                data = loaded.value if isinstance(loaded, ParamRecord) else loaded
                if path in exact:
                    return loaded
                try:
                    converted = convert_checked(
                        data.to_numpy(), settings.stored_dtype(data.dtype), f"entry {join(path)!r}"
                    )
                except PrecisionError as error:
                    raise RecordFileError(f"{error} of {settings!r}", source) from None
                new = TensorData.from_numpy(converted, copy=False)
                return ParamRecord(loaded.id, new) if isinstance(loaded, ParamRecord) else new
            if tag == "$float" and type(body) is str and body in _NON_FINITE:
                return _NON_FINITE[body]
            if tag == "$bytes" and isinstance(body, str):
                try:
                    return base64.b64decode(body, validate=True)
                except binascii.Error:
                    pass
            raise RecordFileError(f"entry {join(path)!r}: a {tag} value that is not valid", source)
        out = {}
        if _quantized.MARKER in value:
            exact.update({(*path, "values"), (*path, "scales")})
        for key, item in value.items():
            if key.startswith("$") and not key.startswith("$$"):
                raise RecordFileError(f"entry {join(path)!r}: the key {key!r:.40} is reserved", source)
            name = key[1:] if key.startswith("$") else key
            out[name] = decode(item, (*path, name))
        if _quantized.is_node(out):
            try:
                return _quantized.from_node(out, join(path))
            except RecordFileError as error:
                raise RecordFileError(error.reason, source) from None
        return out

    if not isinstance(body, dict):
        raise RecordFileError(f"the record is a {type(body).__name__}, expected an object", source)
    return decode(body, ())  # type: ignore[no-any-return]
