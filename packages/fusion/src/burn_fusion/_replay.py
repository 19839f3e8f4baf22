"""``replay``: a step function recorded once and replayed without Python, where the backend can.

How a call is served, by the *call signature* (the structure of the arguments, every tensor's shape,
dtype, device and whether it requires a gradient, and every other value in them; objects compared by
identity, such as functions and locks, count by their type):

1. The first ``warmup`` calls of a signature run eagerly, with the relative signatures of the op
   streams they run (and the scalars in them) traced. These calls also warm the fusion cache.
2. Once two calls in a row traced the same ops with the same scalars (the step's relative signature
   recurs), the next one is captured: the Fusion layer's inner backend records its device work
   (``burn_backend.kit.CAPTURE_HOOK``: a CUDA graph on burn-cuda) while the function runs once more,
   its tensor arguments read from copies in the capture's private memory; the recording is then run.
3. Every later call with that signature copies its tensor arguments into those copies and replays the
   recording: no Python of the function runs. It returns new tensors over the recording's outputs.

A replay overwrites the outputs of the previous call of its signature; any of those still referenced
(by a tensor, or a pending op) is first copied out, so values once returned never change. An output
passed back in as an argument (the model a training step returns) reads its argument copy from then
on, so the loop ``model = step(model, ...)`` copies nothing out.

What the function stores into its arguments' objects (an optimizer's state: ``optim._states[id] =
{...}``; a module's running statistics) is an output too: after each replay, the same stores are made
into the objects of that call's arguments (found by the paths the captured call took to them), with
that replay's values, as a call of the function would make them. So several signatures can share an
optimizer (a last, smaller batch; a step recorded twice), each reading the state the last one stored.
Stores into objects outside the arguments (a global, a closure's object) are made at capture only.

What cannot be
recorded (a value read on the host, an op the backend cannot record) makes the capture fail: that
signature then always runs eagerly, correctly. Where the tensors are on no Fusion layer, or the inner
backend cannot capture (NdArray), every call runs eagerly.

The function must compute the same ops for the same signature (no branch on values it reads, on a
counter or on the time) and read tensors only from its arguments: a tensor it reads from elsewhere is
recorded as it is at capture time (its memory, not its later values). A counter kept as a plain value
among the arguments (an optimizer's step count) makes every signature new: nothing is captured, and a
warning says so; ``AdamConfig(capturable=True)`` keeps Adam's count on the device.
"""

from __future__ import annotations

import copy
import enum
import functools
import threading
import types
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, NamedTuple, ParamSpec, TypeVar

from burn_backend import Backend, Device, DType, Tensor
from burn_backend.kit import CAPTURE_HOOK, BackendDecorator, CaptureError, StepCapture

from ._backend import Fusion
from ._tensor import FusionTensor, Node

P = ParamSpec("P")
R = TypeVar("R")

_CHURN = 8  # new signatures in a row that earn a warning
_PLAIN = frozenset({int, bool, str, type(None)})  # atoms that stand for themselves as they are

# values that stand for themselves in a signature (never walked into)
_ATOMS = (int, float, complex, bool, str, bytes, type(None), DType, enum.Enum, Device, Backend, type)


def replay(function: Callable[P, R] | None = None, *, warmup: int = 2, max_signatures: int = 4) -> Any:
    """Record a step function once per call signature and replay it on the device, without Python.

    Wraps ``function`` (tensors, modules, tuples, lists, dicts and plain values in, the same out). On a
    stack with a Fusion layer over a backend that can record its device work (``Fusion(Cuda())``,
    ``Autodiff(Fusion(Cuda()))``), a call whose signature recurs runs as one replay of the recording:
    one CUDA graph launch instead of the function's hundreds of op calls. Elsewhere it calls
    ``function``. See the module for how a call is served.

    Args:
        function: the step; it must compute the same ops whenever its arguments have the same
            structure, shapes and plain values, and read tensors from its arguments only.
        warmup: eager calls of a signature before its capture (at least 2: the last two must agree).
        max_signatures: recordings kept (least recently used dropped first).

    Returns:
        The wrapped function (usable as ``@replay`` or ``@replay(warmup=3)``).

    Example:
        >>> optim = AdamConfig(capturable=True).init()  # the step count on the device
        >>> @replay
        ... def train_step(model, optim, images, targets):
        ...     loss = criterion(model(images), targets)
        ...     grads = GradientsParams.from_grads(loss.backward(), model)
        ...     return loss, optim.step(1e-3, model, grads)
        >>> loss, model = train_step(model, optim, images, targets)  # doctest: +SKIP
    """
    if function is None:
        return functools.partial(replay, warmup=warmup, max_signatures=max_signatures)
    if warmup < 2:
        raise ValueError(f"replay: warmup must be at least 2 (two eager calls must agree), got {warmup}")
    if max_signatures < 1:
        raise ValueError(f"replay: max_signatures must be at least 1, got {max_signatures}")
    return Replayed(function, warmup, max_signatures)


def can_replay(device: Device) -> bool:
    """Whether ``replay`` can record steps whose tensors are on ``device``: its stack has a Fusion layer
    (under decorators such as ``Autodiff``) over a backend with the step-capture hook (``Cuda``).

    Example:
        >>> can_replay(Autodiff(Fusion(NdArray())).device())  # NdArray cannot record its work
        False
    """
    _, fusion, _ = _stack(device)
    return fusion is not None and hasattr(fusion.inner, CAPTURE_HOOK)


class Replayed(Generic[P, R]):
    """A function wrapped by ``replay``: call it as the function.

    Warns (``UserWarning``) when a capture fails: the signature then runs eagerly.

    Attributes:
        stats: counters: ``eager`` (calls run as the function), ``captured``, ``replayed``, ``refused``
            (captures the backend could not record), ``detached`` (outputs copied out before a replay).
    """

    def __init__(self, function: Callable[P, R], warmup: int, max_signatures: int) -> None:
        self.function = function
        self.warmup = warmup
        self.max_signatures = max_signatures
        self.stats: dict[str, int] = dict.fromkeys(
            ("eager", "captured", "replayed", "refused", "detached"), 0
        )
        self.refusal: CaptureError | None = None
        """Why the last capture failed (its ``__cause__`` is the error the step raised), if one did."""
        self._entries: OrderedDict[_Signature, _Entry] = OrderedDict()
        self._new_in_a_row = 0  # calls in a row with a signature not seen before
        self._lock = threading.RLock()
        functools.update_wrapper(self, function)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        leaves: list[Tensor] = []
        key = _Signature(_walk((args, kwargs), leaves, {}))
        site = _site(leaves)
        if site is None:
            self.stats["eager"] += 1
            return self.function(*args, **kwargs)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry()
                while len(self._entries) > self.max_signatures:
                    self._entries.popitem(last=False)[1].close()
                self._new_in_a_row += 1
                if self._new_in_a_row == _CHURN:
                    warnings.warn(
                        f"replay: no call signature recurs in {self._new_in_a_row} calls of {self._name()}, "
                        "so nothing is captured: a plain value among the arguments changes at each call (a "
                        "step count, as an optimizer's: use AdamConfig(capturable=True), or a float "
                        "learning rate that a scheduler changes)",
                        stacklevel=2,
                    )
            else:
                self._new_in_a_row = 0
                self._entries.move_to_end(key)
            if entry.capture is not None:
                if entry.replay(site, leaves, self.stats):
                    self.stats["replayed"] += 1
                    return entry.fresh((args, kwargs))  # type: ignore[no-any-return]
                self.stats["eager"] += 1  # arguments aliased otherwise than at capture
                return self.function(*args, **kwargs)
            if entry.eager_only or entry.calls < self.warmup or not entry.stable:
                return self._traced(entry, site, args, kwargs)
            return self._capture(entry, site, leaves, args, kwargs)

    def _name(self) -> str:
        return getattr(self.function, "__qualname__", repr(self.function))

    def _traced(self, entry: _Entry, site: _Site, args: Any, kwargs: Any) -> R:
        """Run the function eagerly; until the signature is captured, trace the streams it runs."""
        self.stats["eager"] += 1
        if entry.eager_only:
            return self.function(*args, **kwargs)
        site.flush()  # what was recorded before the call is not the call's
        executor = site.fusion.executor
        trace: list[Any] = []
        outer = executor.trace
        executor.trace = trace
        try:
            result = self.function(*args, **kwargs)
            site.flush()
        finally:
            executor.trace = outer
        entry.stable = trace == entry.trace
        entry.trace = trace
        entry.calls += 1
        return result

    def _capture(self, entry: _Entry, site: _Site, leaves: list[Tensor], args: Any, kwargs: Any) -> R:
        site.flush()
        capture = site.capture()
        if capture is None:
            entry.eager_only = True
            return self._traced(entry, site, args, kwargs)
        inputs: list[tuple[Node, Any]] = []  # (node, its own value)
        statics: dict[int, Any] = {}
        for leaf in leaves:
            fusion_tensor = _fusion_tensor(leaf)
            node = fusion_tensor.node
            if id(node) not in statics:
                value = fusion_tensor.materialize()
                statics[id(node)] = node.value = capture.static_copy(value)
                inputs.append((node, value))
            entry.statics.append(statics[id(node)])
        before = _snapshot((args, kwargs))
        try:

            def body() -> tuple[tuple[R, list[Any]], list[Any]]:
                result = self.function(*args, **kwargs)
                entry.mutations, stored = _mutations(before)
                site.flush()
                outputs = []
                for tensor in _leaves((result, stored)):
                    _, fusion, device = _stack(tensor._device)
                    if fusion is not site.fusion or device != site.device:
                        raise CaptureError(f"replay: an output {tensor.dims()} is not on the step's device")
                    outputs.append(capture.output(_fusion_tensor(tensor).materialize()))
                return (result, stored), outputs

            recorded, outputs = capture.record(body)
        except CaptureError as error:
            capture.close()
            entry.eager_only = True
            self.stats["refused"] += 1
            self.refusal = error
            warnings.warn(f"replay: {self._name()} runs eagerly for this signature: {error}", stacklevel=3)
            return self._traced(entry, site, args, kwargs)
        finally:
            for node, value in inputs:
                node.value = value
        entry.capture = capture
        entry.adopt(recorded, outputs)
        capture.replay()
        self.stats["captured"] += 1
        first: R = entry.fresh((args, kwargs))
        return first


class _Signature:
    """A call signature as a dict key: its hash computed once (a signature holds hundreds of values, and
    each lookup of a plain tuple would hash them all again)."""

    __slots__ = ("_hash", "value")

    def __init__(self, value: Hashable) -> None:
        self.value = value
        self._hash = hash(value)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Signature) and self._hash == other._hash and self.value == other.value


class _Entry:
    """What one call signature has: its traces, then its recording."""

    def __init__(self) -> None:
        self.calls = 0
        self.trace: list[Any] | None = None
        self.stable = False
        self.eager_only = False
        self.capture: StepCapture | None = None
        self.statics: list[Any] = []
        """The capture's copy of each tensor argument, in the order of the call's tensors."""
        self.mutations: list[_Mutation] = []
        """What the captured call stored in its arguments' objects (replayed after each replay)."""
        self.template: Any = None
        self.plan: _Plan | None = None
        """How ``fresh`` rebuilds the template with new tensors."""
        self.outputs: list[_Output] = []
        self.handed: list[tuple[weakref.ref[FusionTensor], Node]] = []
        """The tensors the last call returned (their nodes hold the recording's output buffers)."""
        self.lent: list[tuple[weakref.ref[FusionTensor], Node, Any]] = []
        """Returned tensors passed back in as arguments: their nodes read the argument copy since, so
        that the replay may overwrite their output buffers (taken back before the copy is refilled)."""

    def adopt(self, result: tuple[Any, list[Any]], values: list[Any]) -> None:
        """Take the captured call's ``result`` (what it returned, and what it stored in its arguments'
        objects), whose tensors are over the recording's output ``values``.

        The template keeps the result's structure with plain tensors (not the captured call's, whose
        autodiff graph would keep the capture's intermediates and the caller's inputs alive)."""
        replacements: dict[int, Tensor] = {}
        for tensor, value in zip(_leaves(result), values, strict=True):
            if id(tensor) not in replacements:
                output = _Output(tensor, value)
                output.template = replacements[id(tensor)] = output.tensor(None)
                self.outputs.append(output)
        self.template = _rebuild(result, replacements)
        self.plan = _plan(self.template, {id(t) for t in replacements.values()}, {})

    def replay(self, site: _Site, leaves: list[Tensor], stats: dict[str, int]) -> bool:
        """Copy the call's tensors into the recording's argument copies and replay it; ``False`` (nothing
        done) where two different tensors would go to one copy (they were one tensor at capture)."""
        capture = self.capture
        assert capture is not None
        site.flush()  # pending ops reading the previous outputs run before the replay overwrites them
        filled: dict[int, Any] = {}
        arguments = []
        for leaf, static in zip(leaves, self.statics, strict=True):
            fusion_tensor = _fusion_tensor(leaf)
            node = filled.get(id(static))
            if node is None:
                fusion_tensor.materialize()
                filled[id(static)] = fusion_tensor.node
                arguments.append((fusion_tensor.node, static))  # each copy filled once
            elif node is not fusion_tensor.node:
                return False
        for ref, node, static in self.lent:  # copies about to be refilled: values still in use move out
            if ref() is not None and node.value is static:
                node.value = capture.detach(static)
                stats["detached"] += 1
        handed = {id(node): ref for ref, node in self.handed}
        self.lent = []
        targets, sources = [], []
        for node, static in arguments:
            if node.value is not static:
                targets.append(static)
                sources.append(node.value)
                passed_back = handed.pop(id(node), None)
                if passed_back is not None:  # the last call's output passed back in: it reads the copy now
                    node.value = static
                    self.lent.append((passed_back, node, static))
        capture.copy_into(targets, sources)
        for ref, node in self.handed:  # other outputs still in use keep their values
            if id(node) in handed and ref() is not None:
                node.value = capture.detach(node.value)
                stats["detached"] += 1
        self.handed = []
        capture.replay()
        return True

    def fresh(self, arguments: Any) -> Any:
        """The result of the last replay for the caller: the template with new tensors over the
        recording's outputs (copied out before the next replay if still in use). What the captured call
        stored in its ``arguments``' objects is stored again in this call's, with this replay's values."""
        handed = self.handed
        tensors = {id(output.template): output.tensor(handed) for output in self.outputs}
        result, stored = self.template if self.plan is None else _run_plan(self.plan, tensors, {})
        if self.mutations:
            _store(arguments, self.mutations, stored)
        return result

    def close(self) -> None:
        if self.capture is not None:
            self.capture.close()
            self.capture = None


class _Output:
    """One tensor of the recording's result: its recorded value, the template's tensor standing for it,
    and how to give it to the caller."""

    def __init__(self, template: Tensor, value: Any) -> None:
        self.template = template
        self.value = value
        self.layers = _layers(template)
        self.require_grad = template.is_require_grad()  # a parameter the step returns stays a leaf
        fusion_tensor = _fusion_tensor(template)
        self.shape, self.dtype, self.device = fusion_tensor.shape, fusion_tensor.dtype, fusion_tensor._device

    def tensor(self, handed: list[tuple[weakref.ref[FusionTensor], Node]] | None) -> Tensor:
        """A new tensor over the value; noted in ``handed`` where given."""
        node = Node(self.shape, self.dtype, self.value, None)
        primitive: Any = FusionTensor(node, self.device)
        if handed is not None:
            handed.append((weakref.ref(primitive), node))
        for layer in reversed(self.layers):
            primitive = layer.wrap(primitive)
        template = self.template
        tensor = type(template).from_primitive(primitive, template._device)
        return tensor.require_grad() if self.require_grad else tensor


class _Site:
    """The Fusion layer the tensors of a call are on, and its device."""

    def __init__(self, fusion: Fusion, device: Device) -> None:
        self.fusion = fusion
        self.device = device

    def flush(self) -> None:
        """Run every pending op of the device's streams (without waiting for the device)."""
        for stream in self.fusion.streams(self.device):
            stream.execute()

    def capture(self) -> StepCapture | None:
        """A new recording from the inner backend's hook (which ``_site`` found), or ``None``."""
        capture: StepCapture | None = getattr(self.fusion.inner, CAPTURE_HOOK)(
            self.fusion.inner_device(self.device)
        )
        return capture


_Stack = tuple[tuple[BackendDecorator, ...], Fusion | None, Device | None]
_stacks: dict[int, tuple[Device, _Stack]] = {}
_MAX_STACKS = 64


def _stack(device: Device) -> _Stack:
    """The decorators above ``device``'s Fusion layer (outermost first), that layer and its device;
    ``((), None, None)`` where the stack has no Fusion layer under decorators alone. Found once per
    device object: an equal device of another backend object has layers (and streams) of its own."""
    cached = _stacks.get(id(device))
    if cached is not None and cached[0] is device:
        return cached[1]
    layers = []
    backend, at = device.backend, device
    while not isinstance(backend, Fusion) and isinstance(backend, BackendDecorator):
        layers.append(backend)
        at = backend.inner_device(at)
        backend = backend.inner
    stack: _Stack = (tuple(layers), backend, at) if isinstance(backend, Fusion) else ((), None, None)
    if len(_stacks) >= _MAX_STACKS:  # the cache keeps its devices (and backends) alive: bounded
        _stacks.clear()
    _stacks[id(device)] = (device, stack)  # the device kept: its id is not reused while cached
    return stack


def _site(leaves: list[Tensor]) -> _Site | None:
    """The Fusion layer under every tensor of the call, where they share one with a capturing inner
    backend; else ``None`` (the call runs eagerly)."""
    site: _Site | None = None
    last = None
    for leaf in leaves:
        if leaf._device is last:  # most tensors of a call share one device object
            continue
        last = leaf._device
        _, fusion, device = _stack(last)
        if fusion is None or device is None:
            return None
        if site is None:
            if not hasattr(fusion.inner, CAPTURE_HOOK):
                return None
            site = _Site(fusion, device)
        elif site.fusion is not fusion or site.device != device:
            return None
    return site


def _layers(tensor: Tensor) -> tuple[BackendDecorator, ...]:
    """The decorators above the Fusion layer of ``tensor``'s stack, outermost first."""
    return _stack(tensor._device)[0]


def _fusion_tensor(tensor: Tensor) -> FusionTensor:
    primitive = tensor._primitive
    for layer in _stack(tensor._device)[0]:
        primitive = layer.unwrap(primitive)
    if type(primitive) is not FusionTensor:
        raise TypeError(
            f"replay: expected a tensor of a Fusion layer, got a primitive {type(primitive).__name__}"
        )
    return primitive


_CALLABLES = (
    types.FunctionType, types.MethodType, types.BuiltinFunctionType, types.ModuleType, functools.partial
)  # fmt: skip
_ATOM, _TENSOR, _SEQUENCE, _DICT, _OBJECT, _VALUE, _OPAQUE = range(7)
_categories: dict[type, int] = {}
_slots: dict[type, tuple[str, ...]] = {}


def _category(kind: type) -> int:
    """How ``_walk`` treats values of ``kind`` (decided once per type)."""
    category = _categories.get(kind)
    if category is None:
        if issubclass(kind, _ATOMS):
            category = _ATOM
        elif issubclass(kind, Tensor):
            category = _TENSOR
        elif issubclass(kind, (tuple, list)):
            category = _SEQUENCE
        elif kind is dict:
            category = _DICT
        elif issubclass(kind, _CALLABLES):
            category = _OPAQUE
        elif any("__dict__" in cls.__dict__ for cls in kind.__mro__[:-1]) or _slot_names(kind):
            category = _OBJECT
        elif kind.__eq__ is not object.__eq__ and kind.__hash__ is not None:
            category = _VALUE  # a value type stands for itself
        else:
            # compared by identity (a lock, an array): only its type counts, as a model's modules are
            # new objects at every step
            category = _OPAQUE
        _categories[kind] = category
    return category


def _slot_names(kind: type) -> tuple[str, ...]:
    names = _slots.get(kind)
    if names is None:
        found = []
        for cls in kind.__mro__:
            slots = cls.__dict__.get("__slots__", ())
            for name in (slots,) if isinstance(slots, str) else slots:
                if name not in ("__dict__", "__weakref__"):
                    found.append(name)
        names = _slots[kind] = tuple(found)
    return names


def _walk(value: Any, leaves: list[Tensor], seen: dict[int, int]) -> Hashable:
    """The signature of ``value``, appending the tensors in it to ``leaves`` (in a fixed order)."""
    kind = type(value)
    category = _categories.get(kind)
    if category is None:
        category = _category(kind)
    if category == _ATOM:
        return value if kind is not float or value == value else ("nan",)
    if category == _TENSOR:
        leaves.append(value)
        primitive, device = value._primitive, value._device
        tracked = device.backend.is_autodiff and value.is_require_grad()
        return (kind, tuple(primitive.shape), primitive.dtype, device, tracked)
    # plain values are most fields of a model: taken as they are, without a call
    if category == _SEQUENCE:
        return (kind, tuple([i if type(i) in _PLAIN else _walk(i, leaves, seen) for i in value]))
    if category == _DICT:
        return (
            dict,
            tuple([(n, i if type(i) in _PLAIN else _walk(i, leaves, seen)) for n, i in value.items()]),
        )
    if category == _VALUE:
        return value  # type: ignore[no-any-return]
    if category == _OPAQUE:
        return (kind,)
    ident = id(value)
    if ident in seen:
        return ("seen", seen[ident])
    seen[ident] = len(seen)
    return (kind, tuple([(n, i if type(i) in _PLAIN else _walk(i, leaves, seen)) for n, i in _fields(value)]))


def _fields(value: Any) -> list[tuple[str, Any]]:
    """The attributes of an object: its ``__dict__`` and its slots."""
    state = getattr(value, "__dict__", None)
    fields = list(state.items()) if isinstance(state, dict) else []
    names = _slots.get(type(value))
    if names is None:
        names = _slot_names(type(value))
    for name in names:
        item = getattr(value, name, _fields)
        if item is not _fields:
            fields.append((name, item))
    return fields


def _leaves(value: Any) -> list[Tensor]:
    leaves: list[Tensor] = []
    _walk(value, leaves, {})
    return leaves


_plain_copy: dict[type, bool] = {}


def _shallow_copy(value: Any) -> Any:
    """``copy.copy(value)``; for a class that does not customize copying, without the copy protocol's
    detour (a replayed step rebuilds every module and parameter it returns)."""
    kind = type(value)
    plain = _plain_copy.get(kind)
    if plain is None:
        plain = _plain_copy[kind] = not any(
            getattr(kind, name, None) is not getattr(object, name, None)
            for name in ("__copy__", "__reduce_ex__", "__reduce__", "__getstate__", "__setstate__", "__new__")
        )
    if not plain:
        return copy.copy(value)
    new = object.__new__(kind)
    state = getattr(value, "__dict__", None)
    if state is not None:
        new.__dict__.update(state)
    for name in _slot_names(kind):
        item = getattr(value, name, _fields)
        if item is not _fields:
            object.__setattr__(new, name, item)
    return new


class _Mutation(NamedTuple):
    """A store the captured call made into an object of its arguments: ``container[key] = value``
    (``key`` ``None``: a list's whole contents), or ``del container[key]``."""

    path: tuple[tuple[int, Any], ...]  # (category, key) steps from the arguments to the container
    category: int  # the container's: _SEQUENCE (a list), _DICT or _OBJECT
    key: Any
    deleted: bool


_Snapshot = list[tuple[tuple[tuple[int, Any], ...], Any, int, dict[Any, Any]]]


def _snapshot(arguments: Any) -> _Snapshot:
    """Every list, dict and object reachable from ``arguments`` (by the first path to it), with its
    entries as they are now."""
    found: _Snapshot = []
    _visit(arguments, (), found, set())
    return found


def _visit(value: Any, path: tuple[tuple[int, Any], ...], found: _Snapshot, seen: set[int]) -> None:
    # a module function, not a closure: a recursive closure refers to itself, and that cycle would keep
    # the snapshot (the step's containers and tensors) alive until Python's cycle collector ran
    category = _category(type(value))
    if category not in (_SEQUENCE, _DICT, _OBJECT) or id(value) in seen:
        return
    seen.add(id(value))
    entries = _entries(value, category)
    if category != _SEQUENCE or isinstance(value, list):  # a tuple cannot be stored into
        found.append((path, value, category, dict(entries)))
    for key, item in entries:
        _visit(item, (*path, (category, key)), found, seen)


def _entries(value: Any, category: int) -> list[tuple[Any, Any]]:
    if category == _SEQUENCE:
        return list(enumerate(value))
    if category == _DICT:
        return list(value.items())
    return _fields(value)


def _mutations(before: _Snapshot) -> tuple[list[_Mutation], list[Any]]:
    """What was stored into the containers of ``before`` since it was taken, and the values stored."""
    mutations: list[_Mutation] = []
    stored: list[Any] = []
    for path, container, category, entries in before:
        now = _entries(container, category)
        if category == _SEQUENCE:
            if len(now) != len(entries) or any(item is not entries[key] for key, item in now):
                mutations.append(_Mutation(path, category, None, False))
                stored.append(list(container))
            continue
        for key, item in now:
            if key not in entries or entries[key] is not item:
                mutations.append(_Mutation(path, category, key, False))
                stored.append(item)
        keys = {key for key, _ in now}
        mutations.extend(_Mutation(path, category, key, True) for key in entries if key not in keys)
    return mutations, stored


def _store(arguments: Any, mutations: list[_Mutation], stored: list[Any]) -> None:
    """Make the stores of ``mutations`` into the objects of ``arguments`` (found by their paths, all
    before the first store, as the captured call found them), with the values ``stored``."""
    containers = []
    for mutation in mutations:
        container = arguments
        for category, key in mutation.path:
            container = getattr(container, key) if category == _OBJECT else container[key]
        containers.append(container)
    values = iter(stored)
    for mutation, container in zip(mutations, containers, strict=True):
        if mutation.deleted:  # already made where the call was the captured one
            if mutation.category != _OBJECT:
                container.pop(mutation.key, None)
            elif hasattr(container, mutation.key):
                object.__delattr__(container, mutation.key)
        elif mutation.category == _SEQUENCE:
            container[:] = next(values)
        elif mutation.category == _OBJECT:
            object.__setattr__(container, mutation.key, next(values))
        else:
            container[mutation.key] = next(values)


_Plan = tuple[Any, ...]
"""How ``_Entry.fresh`` rebuilds a result: ``(_TENSOR, id)`` for an output tensor, else ``(category,
value, [(key, plan), ...])`` for a container or object and those of its entries that hold an output."""


def _plan(value: Any, outputs: set[int], memo: dict[int, _Plan | None]) -> _Plan | None:
    """The rebuilding plan of ``value`` for the tensors whose ids are in ``outputs`` (``None``: it holds
    none of them, and is kept as it is)."""
    category = _category(type(value))
    if category == _TENSOR:
        return (_TENSOR, id(value)) if id(value) in outputs else None
    if category in (_ATOM, _VALUE, _OPAQUE):
        return None
    ident = id(value)
    if ident in memo:
        return memo[ident]
    memo[ident] = None  # a cycle holds nothing more through itself
    children = []
    for key, item in _entries(value, category):
        child = _plan(item, outputs, memo)
        if child is not None:
            children.append((key, child))
    plan = (category, value, children) if children else None
    memo[ident] = plan
    return plan


def _run_plan(plan: _Plan, tensors: dict[int, Tensor], memo: dict[int, Any]) -> Any:
    """The value of ``plan`` with its output tensors taken from ``tensors`` (by the template's ids);
    every container and object on the way is a new shallow copy (made once where shared)."""
    if plan[0] == _TENSOR:
        return tensors[plan[1]]
    category, value, children = plan
    ident = id(value)
    result = memo.get(ident)
    if result is not None:
        return result
    if category == _SEQUENCE:
        items = list(value)
        for key, child in children:
            items[key] = _run_plan(child, tensors, memo)
        result = type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    elif category == _DICT:
        result = dict(value)
        for key, child in children:
            result[key] = _run_plan(child, tensors, memo)
    else:
        result = _shallow_copy(value)
        for key, child in children:
            object.__setattr__(result, key, _run_plan(child, tensors, memo))
    memo[ident] = result
    return result


def _rebuild(value: Any, replacements: dict[int, Tensor]) -> Any:
    """``value`` with the tensors whose ids ``replacements`` maps replaced: its plan, run once."""
    plan = _plan(value, set(replacements), {})
    return value if plan is None else _run_plan(plan, replacements, {})
