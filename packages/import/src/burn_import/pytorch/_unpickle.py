"""The restricted unpickler of PyTorch files: it builds state dicts and nothing else.

It is Python's own pure-Python unpickler with a few opcodes replaced, because the C one cannot be
watched while it builds: every global resolves to a stand-in of ours (or is refused by name before
anything is called), instances are neither created from classes (``NEWOBJ``, ``INST``, ``OBJ``) nor
given state (``BUILD``, except on a dict), and every tuple, frozenset and slice is checked for depth
when it is made: hashing a tuple nested 100,000 deep (a dict key) overflows the C stack of the
process, so such a tuple must never exist. After loading, the whole object is walked once (without
recursion) against the depth and object-count limits, so that code reading it later neither recurses
out of stack nor walks an exponential number of paths through shared containers.
"""

from __future__ import annotations

import builtins
import pickle
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ClassVar

from ._lazy import STORAGE_DTYPES, LazyArray, PyTorchReadError, Storage
from ._limits import ReadLimits

__all__ = ["RestrictedUnpickler", "check_structure"]

_SAFE_BUILTINS = {"set", "frozenset", "tuple", "list", "dict", "slice", "int", "float", "bool", "complex"}
_HASHED_CONTAINERS = (tuple, frozenset, slice)


class _Marker:
    """A class the pickle names but whose construction is never needed (``torch.nn.Parameter``)."""

    def __init__(self, name: str) -> None:
        self.name = name


class _StorageType:
    """A storage class of PyTorch's (``torch.FloatStorage``): only its dtype matters."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dtype = STORAGE_DTYPES[name]


class _TensorRebuild:
    """PyTorch's ``_rebuild_tensor_v2``: a ``LazyArray`` over a storage, counted against the limit."""

    def __init__(self, unpickler: RestrictedUnpickler) -> None:
        self.unpickler = unpickler

    def __call__(self, storage: Any, offset: Any, size: Any, stride: Any, *rest: Any) -> LazyArray:
        source = self.unpickler.source
        if not isinstance(storage, Storage):
            raise PyTorchReadError(f"{source}: a tensor refers to a {type(storage).__name__}, not a storage")
        if not (isinstance(size, tuple) and isinstance(stride, tuple)):
            raise PyTorchReadError(
                f"{source}: a tensor's size and stride must be tuples, got {type(size).__name__} "
                f"and {type(stride).__name__}"
            )
        numbers = (offset, *size, *stride)
        if not all(type(n) is int for n in numbers):
            raise PyTorchReadError(f"{source}: a tensor's offset, size and stride must be integers")
        tensors = self.unpickler.tensors
        if len(tensors) >= self.unpickler.limits.max_tensors:
            raise PyTorchReadError(
                f"{source}: more than {self.unpickler.limits.max_tensors} tensors (ReadLimits.max_tensors)"
            )
        tensor = LazyArray(storage, offset, size, stride)
        tensors.append(tensor)
        return tensor


def _rebuild_parameter(data: Any, *args: Any) -> Any:
    return data


def _latin1(text: Any, encoding: Any) -> bytes:
    """``_codecs.encode`` as pickle protocol 2 uses it for a ``bytes`` object: latin-1 only."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise PyTorchReadError("_codecs.encode other than of a string to latin-1 (a bytes object)")
    return text.encode("latin-1")


class _TypeRebuild:
    """PyTorch's ``_rebuild_from_type_v2``: only ever around a tensor rebuild."""

    def __init__(self, allowed: tuple[Any, ...]) -> None:
        self.allowed = allowed

    def __call__(self, func: Any, new_type: Any, args: Any, state: Any) -> Any:
        if not any(func is allowed for allowed in self.allowed) or not isinstance(args, tuple):
            raise PyTorchReadError("_rebuild_from_type_v2 with a function other than a tensor rebuild")
        return func(*args)


class RestrictedUnpickler(pickle._Unpickler):
    """An unpickler that builds only tensors, storages, ``OrderedDict`` and plain containers, within
    ``limits`` (see the module docstring)."""

    dispatch: ClassVar[dict[int, Callable[[Any], None]]] = dict(pickle._Unpickler.dispatch)
    # set by the base class (its stack of objects being built), undeclared in its type stubs
    stack: list[Any]
    append: Callable[[Any], None]
    pop_mark: Callable[[], list[Any]]

    def __init__(self, file: Any, source: str, storages: dict[str, Storage], limits: ReadLimits) -> None:
        super().__init__(file)
        self.source = source
        self.storages = storages
        self.limits = limits
        self.tensors: list[LazyArray] = []
        # id -> (object, depth) of every tuple, frozenset and slice made: kept alive so ids stay theirs
        self.depths: dict[int, tuple[Any, int]] = {}
        rebuild = _TensorRebuild(self)
        self.allowed: dict[tuple[str, str], Any] = {
            ("collections", "OrderedDict"): OrderedDict,
            ("_codecs", "encode"): _latin1,
            ("torch._utils", "_rebuild_tensor_v2"): rebuild,
            ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
            ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter,
            ("torch._tensor", "_rebuild_from_type_v2"): _TypeRebuild((rebuild, _rebuild_parameter)),
            ("torch.nn.parameter", "Parameter"): _Marker("torch.nn.Parameter"),
            ("torch", "Tensor"): _Marker("torch.Tensor"),
        }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in self.allowed:
            return self.allowed[(module, name)]
        if module == "torch" and name in STORAGE_DTYPES:
            return _StorageType(name)
        if module in ("builtins", "__builtin__") and name in _SAFE_BUILTINS:
            return getattr(builtins, name)
        raise PyTorchReadError(
            f"{self.source}: refused to load global '{_short(module)}.{_short(name)}': a PyTorch weights "
            "file needs only tensors, storages, OrderedDicts, containers and numbers (nothing was executed)"
        )

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) >= 3 and pid[0] == "storage"):
            raise PyTorchReadError(f"{self.source}: unknown persistent id (a {type(pid).__name__})")
        storage_type, key = pid[1], pid[2]
        numel = pid[4] if len(pid) > 4 else None
        if not isinstance(storage_type, _StorageType):
            raise PyTorchReadError(
                f"{self.source}: a storage of unsupported type {type(storage_type).__name__}"
            )
        if not isinstance(key, str) or (numel is not None and (type(numel) is not int or numel < 0)):
            raise PyTorchReadError(f"{self.source}: a storage's key must be a string and its size a count")
        storage = self.storages.get(key)
        if storage is None:
            if len(self.storages) >= self.limits.max_tensors:
                raise PyTorchReadError(
                    f"{self.source}: more than {self.limits.max_tensors} storages (ReadLimits.max_tensors)"
                )
            storage = self.storages[key] = Storage(storage_type.dtype, key, numel, self.source, self.limits)
        elif storage.dtype != storage_type.dtype:
            raise PyTorchReadError(
                f"{self.source}: storage {key!r} is referred to as both {storage.dtype} and "
                f"{storage_type.dtype}"
            )
        return storage

    # -- the replaced opcodes ------------------------------------------------------------------------
    def _checked(self, value: Any) -> Any:
        """``value``, registered with its depth when it is a tuple, frozenset or slice (refused past
        the depth limit: these are hashed recursively, without Python's recursion check)."""
        if not isinstance(value, _HASHED_CONTAINERS):
            return value
        items = (value.start, value.stop, value.step) if isinstance(value, slice) else value
        depth = 1 + max((self.depths.get(id(item), (None, 0))[1] for item in items), default=0)
        if depth > self.limits.max_depth:
            raise PyTorchReadError(
                f"{self.source}: a {type(value).__name__} nested more than {self.limits.max_depth} deep "
                "(ReadLimits.max_depth)"
            )
        self.depths[id(value)] = (value, depth)
        return value

    def _load_tuple(self) -> None:
        items = tuple(self.pop_mark())  # before ``self.append``: popping the mark rebinds it
        self.append(self._checked(items))

    def _load_small_tuple(self, count: int) -> None:
        items = tuple(self.stack[len(self.stack) - count :]) if count else ()
        del self.stack[len(self.stack) - count :]
        self.append(self._checked(items))

    def _load_frozenset(self) -> None:
        items = frozenset(self.pop_mark())
        self.append(self._checked(items))

    def _load_reduce(self) -> None:
        args = self.stack.pop()
        if not isinstance(args, tuple):
            raise PyTorchReadError(f"{self.source}: a call's arguments are a {type(args).__name__}")
        self.stack[-1] = self._checked(self.stack[-1](*args))

    def _load_build(self) -> None:
        self.stack.pop()  # a dict's state is its attributes (a state dict's ``_metadata``): not needed
        if not isinstance(self.stack[-1], dict):
            raise PyTorchReadError(
                f"{self.source}: refused to set the state of a {type(self.stack[-1]).__name__} "
                "(only dicts take state in a weights file)"
            )

    def _refuse_instance(self) -> None:
        raise PyTorchReadError(
            f"{self.source}: refused to create an instance from a class (a weights file needs none)"
        )

    dispatch[pickle.TUPLE[0]] = _load_tuple
    dispatch[pickle.EMPTY_TUPLE[0]] = lambda self: self._load_small_tuple(0)
    dispatch[pickle.TUPLE1[0]] = lambda self: self._load_small_tuple(1)
    dispatch[pickle.TUPLE2[0]] = lambda self: self._load_small_tuple(2)
    dispatch[pickle.TUPLE3[0]] = lambda self: self._load_small_tuple(3)
    dispatch[pickle.FROZENSET[0]] = _load_frozenset
    dispatch[pickle.REDUCE[0]] = _load_reduce
    dispatch[pickle.BUILD[0]] = _load_build
    for _opcode in (pickle.NEWOBJ, pickle.NEWOBJ_EX, pickle.INST, pickle.OBJ):
        dispatch[_opcode[0]] = _refuse_instance


def _short(name: str) -> str:
    return name if len(name) <= 80 else f"{name[:77]}..."


def check_structure(obj: Any, source: str, limits: ReadLimits) -> None:
    """Refuse an object nested deeper than ``limits.max_depth`` or holding more than
    ``limits.max_objects`` objects counted as a tree (a container shared by several parents counts
    at every place it appears, as code walking it meets it; a cycle is infinitely deep)."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    count = 0
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > limits.max_objects:
            raise PyTorchReadError(
                f"{source}: more than {limits.max_objects} objects, shared ones counted at each place "
                "(ReadLimits.max_objects)"
            )
        if depth > limits.max_depth:
            raise PyTorchReadError(
                f"{source}: containers nested more than {limits.max_depth} deep (ReadLimits.max_depth)"
            )
        if isinstance(value, dict):
            stack.extend((item, depth + 1) for pair in value.items() for item in pair)
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack.extend((item, depth + 1) for item in value)
