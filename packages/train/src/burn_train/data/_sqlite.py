"""``SqliteDataset`` and ``SqliteDatasetWriter``: items in an SQLite file (Python's ``sqlite3``), for data
sets bigger than memory (Burn's ``SqliteDataset``)."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ._dataset import Dataset

__all__ = ["SqliteDataset", "SqliteDatasetError", "SqliteDatasetWriter"]

I = TypeVar("I")  # noqa: E741

_SCHEMA = "__burn_columns"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _check_name(where: str, what: str, name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name) or name.startswith("__") or name == "row_id":
        raise ValueError(
            f"{where}: the {what} {name!r} must be an identifier (letters, digits, _) not starting with "
            "__ and other than row_id"
        )
    return name


def _kind_of(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "bytes"
    if isinstance(value, np.ndarray):
        return "array"
    if isinstance(value, (list, tuple, dict)):
        return "json"
    raise TypeError(f"cannot store a {type(value).__name__}")


def _encode(kind: str, value: Any) -> Any:
    if value is None:
        return None
    if kind == "array":
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(value), allow_pickle=False)
        return buffer.getvalue()
    if kind == "json":
        return json.dumps(value)
    if kind == "bool":
        return int(bool(value))
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    if kind == "bytes":
        return bytes(value)
    return value


class SqliteDatasetError(ValueError):
    """An SQLite file that ``SqliteDataset`` cannot read as a data set: not a database, without the
    writer's schema, or holding a value that does not fit its column (a NumPy array whose header
    declares more bytes than the blob holds, a value larger than ``max_value_bytes``, JSON that does not
    parse or nests too deeply, a text where an int belongs). The message names the file, the split
    (table), the row and the field, what was found and what was expected.

    Example:
        >>> try:
        ...     SqliteDataset("data.db", "train").get(0)
        ... except SqliteDatasetError as error:
        ...     print(error)  # doctest: +SKIP
        SqliteDataset data.db, split 'train', row 0, field 'image': the array header declares ...
    """


_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (float, int),
    "bool": (int,),
    "str": (str,),
    "bytes": (bytes,),
    "array": (bytes,),
    "json": (str,),
}
_NPY_HEADER = 1 << 16  # the largest .npy header read (NumPy writes well under 1 KB)


def _array(value: bytes, where: str) -> np.ndarray:
    """The ``.npy`` array in ``value``, its declared size checked against the bytes present before the
    array is made, with no pickle."""
    stream = io.BytesIO(value)
    try:
        version = np.lib.format.read_magic(stream)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream, max_header_size=_NPY_HEADER)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream, max_header_size=_NPY_HEADER)
    except (ValueError, TypeError, SyntaxError, EOFError) as error:
        raise SqliteDatasetError(f"{where}: not a NumPy .npy array ({error})") from None
    if dtype.hasobject:
        raise SqliteDatasetError(f"{where}: an array of Python objects (dtype {dtype}) would need pickle")
    count = 1
    for size in shape:
        count *= int(size)
    declared, present = count * dtype.itemsize, len(value) - stream.tell()
    if declared != present:
        raise SqliteDatasetError(
            f"{where}: the array header declares shape {tuple(shape)} of {dtype} ({declared} bytes), the "
            f"blob holds {present} bytes after its header"
        )
    array: np.ndarray = np.frombuffer(value, dtype, count, offset=stream.tell())
    array = array.reshape(shape, order="F" if fortran else "C").copy(order="K")
    return array


def _fits(kind: str, value: Any) -> bool:
    """Whether SQLite gave ``value`` the Python type a ``kind`` column holds."""
    return isinstance(value, _PYTHON_TYPES[kind])


def _decode(kind: str, value: Any, where: str) -> Any:
    if value is None:
        return None
    if not _fits(kind, value):
        raise SqliteDatasetError(f"{where}: a {type(value).__name__} value in a column of {kind}s")
    if kind == "array":
        return _array(value, where)
    if kind == "json":
        try:
            return json.loads(value)
        except RecursionError:
            raise SqliteDatasetError(f"{where}: the JSON value nests too deeply to decode") from None
        except ValueError as error:
            raise SqliteDatasetError(f"{where}: not a JSON value ({error})") from None
    if kind == "bool":
        return bool(value)
    return value


def _as_row(where: str, item: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return {field.name: getattr(item, field.name) for field in dataclasses.fields(item)}
    if isinstance(item, Mapping):
        return dict(item)
    raise TypeError(f"{where}: expected a dict or a dataclass instance, got {type(item).__name__}")


class SqliteDatasetWriter:
    """Writes items into an SQLite file, one table per split (Burn's ``SqliteDatasetWriter``).

    Items are dicts (or dataclass instances) whose values are ints, floats, bools, strings, bytes, NumPy
    arrays (stored in NumPy's ``.npy`` format, read back without pickle), JSON-ready lists and dicts, or
    ``None``; a split's columns and their kinds are fixed by its first item. The file is written under
    a temporary name and appears at ``path`` only at ``set_completed()``, so a reader never sees half a
    data set.

    Args:
        path: the database file to make.
        overwrite: whether an existing file at ``path`` may be replaced.

    Raises:
        FileExistsError: ``path`` exists and ``overwrite`` is false.

    Example:
        >>> writer = SqliteDatasetWriter("data.db", overwrite=True)  # doctest: +SKIP
        >>> writer.write("train", {"image": np.zeros((2, 2)), "label": 3})  # doctest: +SKIP
        0
        >>> writer.set_completed()  # doctest: +SKIP
    """

    def __init__(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        self._path = Path(path)
        if self._path.exists() and not overwrite:
            raise FileExistsError(f"SqliteDatasetWriter: {self._path} exists; overwrite=True replaces it")
        self._partial = self._path.with_name(self._path.name + ".part")
        self._partial.unlink(missing_ok=True)
        self._path.parent.mkdir(parents=True, exist_ok=True)
        self._connection: sqlite3.Connection | None = sqlite3.connect(self._partial, check_same_thread=False)
        self._connection.execute(
            f"CREATE TABLE {_SCHEMA} (split TEXT, position INTEGER, name TEXT, kind TEXT, "
            "PRIMARY KEY (split, name))"
        )
        self._columns: dict[str, dict[str, str | None]] = {}
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    def write(self, split: str, item: Any) -> int:
        """Append ``item`` to ``split`` (created at its first item); returns the item's index.

        Raises:
            ValueError: the split name is not an identifier, or the item's fields differ from the
                split's first item's, or a value's kind differs from its column's.
            TypeError: a value cannot be stored.
            RuntimeError: the writer was completed already.
        """
        where = f"SqliteDatasetWriter.write({split!r})"
        _check_name(where, "split", split)
        row = _as_row(where, item)
        with self._lock:
            connection = self._open(where)
            columns = self._columns.get(split)
            if columns is None:
                columns = self._create(where, connection, split, row)
            if set(row) != set(columns):
                raise ValueError(f"{where}: the item has fields {sorted(row)}, the split {sorted(columns)}")
            values = []
            for name, kind in columns.items():
                try:
                    found = _kind_of(row[name])
                except TypeError as error:
                    raise TypeError(f"{where}: field {name!r}: {error}") from None
                if found is not None and kind is None:
                    kind = columns[name] = found
                    connection.execute(
                        f"UPDATE {_SCHEMA} SET kind = ? WHERE split = ? AND name = ?", (kind, split, name)
                    )
                compatible = found == kind or (kind == "float" and found == "int")
                if found is not None and not compatible:
                    raise ValueError(f"{where}: field {name!r} holds a {found}; the column holds {kind}s")
                values.append(_encode(kind or found or "str", row[name]))
            index = self._counts[split]
            names = ", ".join(["row_id", *columns])
            marks = ", ".join("?" * (len(columns) + 1))
            connection.execute(f"INSERT INTO {split} ({names}) VALUES ({marks})", (index, *values))
            self._counts[split] = index + 1
            return index

    def write_many(self, split: str, items: Iterable[Any]) -> None:
        """``write`` each of ``items`` to ``split``."""
        for item in items:
            self.write(split, item)

    def set_completed(self) -> Path:
        """Finish the file and move it to ``path`` (replacing any file there); returns ``path``."""
        with self._lock:
            connection = self._open("SqliteDatasetWriter.set_completed")
            connection.commit()
            connection.close()
            self._connection = None
            os.replace(self._partial, self._path)
        return self._path

    def _open(self, where: str) -> sqlite3.Connection:
        if self._connection is None:
            raise RuntimeError(f"{where}: the writer is completed; make a new one to write more")
        return self._connection

    def _create(
        self, where: str, connection: sqlite3.Connection, split: str, row: dict[str, Any]
    ) -> dict[str, str | None]:
        columns: dict[str, str | None] = {}
        for position, (name, value) in enumerate(row.items()):
            _check_name(where, "field name", name)
            try:
                columns[name] = _kind_of(value)
            except TypeError as error:
                raise TypeError(f"{where}: field {name!r}: {error}") from None
            connection.execute(
                f"INSERT INTO {_SCHEMA} VALUES (?, ?, ?, ?)", (split, position, name, columns[name])
            )
        definitions = ", ".join(["row_id INTEGER PRIMARY KEY", *columns])
        connection.execute(f"CREATE TABLE {split} ({definitions})")
        self._columns[split] = columns
        self._counts[split] = 0
        return columns


class SqliteDataset(Dataset[I]):
    """The items of one split of an SQLite file written by ``SqliteDatasetWriter`` (Burn's
    ``SqliteDataset``), read on demand: the data set need not fit in memory.

    Each thread reading it gets its own read-only connection, so data loader workers read in parallel.
    Values are checked as they are read: one longer than ``max_value_bytes`` is refused before SQLite
    hands it over, an array whose ``.npy`` header declares another size than its blob holds is refused
    before it is made, and so is JSON that does not parse or nests too deeply.

    Args:
        path: the database file.
        split: the table to read (``"train"``, ``"test"``, ...).
        item_type: builds each item from its fields as keyword arguments (a dataclass, say); by
            default items are dicts.
        max_value_bytes: the largest value (array, bytes, text or JSON) one field may hold, 1 GiB by
            default (SQLite's own default limit on a value).

    Raises:
        FileNotFoundError: there is no file at ``path``.
        SqliteDatasetError: the file is not a database ``SqliteDatasetWriter`` wrote, or has no such
            split (the splits it has are named); ``get`` raises it for a value that does not fit its
            column (naming the split, row and field).

    Example:
        >>> dataset = SqliteDataset.from_db_file("data.db", "train")  # doctest: +SKIP
        >>> dataset.get(0)["label"]  # doctest: +SKIP
        3
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        split: str,
        item_type: Callable[..., I] | None = None,
        *,
        max_value_bytes: int = 1 << 30,
    ) -> None:
        self._path = Path(path)
        if not self._path.is_file():
            raise FileNotFoundError(f"SqliteDataset: no database file at {self._path}")
        self._split = _check_name("SqliteDataset", "split", split)
        self._item_type = item_type
        self._max_value_bytes = int(max_value_bytes)
        self._local = threading.local()
        where = f"SqliteDataset {self._path}"
        try:
            rows = self._connection().execute(
                f"SELECT name, kind FROM {_SCHEMA} WHERE split = ? ORDER BY position", (split,)
            )
            self._columns: list[tuple[str, str]] = [(name, kind or "str") for name, kind in rows]
            if not self._columns:
                splits = self.splits(path)
                raise SqliteDatasetError(f"{where} has no split {split!r}; it has {splits}")
            for name, kind in self._columns:
                if kind not in _PYTHON_TYPES or not isinstance(name, str) or not _NAME.match(name):
                    raise SqliteDatasetError(
                        f"{where}, split {split!r}: a column {name!r} of unknown kind {kind!r} (expected one "
                        f"of {sorted(_PYTHON_TYPES)})"
                    )
            (self._length,) = self._connection().execute(f"SELECT COUNT(*) FROM {split}").fetchone()
        except sqlite3.DatabaseError as error:
            raise SqliteDatasetError(f"{where}: not a data set SqliteDatasetWriter wrote ({error})") from None
        # a value over the limit comes back as its length only, so SQLite never hands it over
        selected = [
            f"CASE WHEN length({name}) > {self._max_value_bytes} THEN NULL ELSE {name} END, length({name})"
            for name, _ in self._columns
        ]
        self._query = f"SELECT {', '.join(selected)} FROM {split} WHERE row_id = ?"

    @classmethod
    def from_db_file(
        cls, path: str | os.PathLike[str], split: str, item_type: Callable[..., I] | None = None
    ) -> SqliteDataset[I]:
        """Burn's spelling of ``SqliteDataset(path, split)``.

        Example:
            >>> dataset = SqliteDataset.from_db_file("data.db", "train")  # doctest: +SKIP
        """
        return cls(path, split, item_type)

    @staticmethod
    def splits(path: str | os.PathLike[str]) -> list[str]:
        """The splits stored in the file at ``path``."""
        uri = Path(path).resolve().as_uri() + "?mode=ro"
        with sqlite3.connect(uri, uri=True) as connection:
            return [name for (name,) in connection.execute(f"SELECT DISTINCT split FROM {_SCHEMA}")]

    def _connection(self) -> sqlite3.Connection:
        connection: sqlite3.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            uri = self._path.resolve().as_uri() + "?mode=ro"
            connection = self._local.connection = sqlite3.connect(uri, uri=True)
        return connection

    def get(self, index: int) -> I | None:
        """The item at ``index``, or ``None`` out of range."""
        if not 0 <= index < self._length:
            return None
        where = f"SqliteDataset {self._path}, split {self._split!r}, row {int(index)}"
        try:
            values = self._connection().execute(self._query, (int(index),)).fetchone()
        except sqlite3.DatabaseError as error:
            raise SqliteDatasetError(f"{where}: the database cannot be read ({error})") from None
        if values is None:
            return None
        row = {}
        for position, (name, kind) in enumerate(self._columns):
            value, length = values[2 * position], values[2 * position + 1]
            if length is not None and length > self._max_value_bytes:
                raise SqliteDatasetError(
                    f"{where}, field {name!r}: a value of {length} bytes, more than max_value_bytes "
                    f"({self._max_value_bytes})"
                )
            row[name] = _decode(kind, value, f"{where}, field {name!r}")
        return row if self._item_type is None else self._item_type(**row)  # type: ignore[return-value]

    def len(self) -> int:
        """The number of items of the split."""
        return int(self._length)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_local")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._local = threading.local()
