"""``Config``: declarations of a module's (or a training run's) settings, saved and loaded as JSON."""

from __future__ import annotations

import dataclasses
import enum
import json
import numbers
import os
import re
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

T = TypeVar("T")

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
elif sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # pragma: no cover - Python 3.10: the decorator only informs type checkers

    def dataclass_transform(**_: Any) -> Callable[[T], T]:
        return lambda cls: cls


__all__ = ["Config", "ConfigError", "variant"]

C = TypeVar("C", bound="Config")


class ConfigError(ValueError):
    """A config could not be built from JSON: a field missing, unknown or of the wrong type."""


_VARIANT_BASES: set[type] = set()


def variant(base: type[T]) -> type[T]:
    """Mark ``base`` as an enum-like family of frozen dataclasses (such as ``Initializer``): a value of
    one of its subclasses is written to JSON as ``{"SubclassName": {fields}}`` and read back by name."""
    _VARIANT_BASES.add(base)
    return base


@dataclass_transform(frozen_default=True)
class Config:
    """The base of configs: subclasses declare fields with type annotations and optional defaults, as a
    dataclass does, and become frozen dataclasses.

    Fields without a default are required (positionally or by name); values are checked against the
    annotations at construction (a ``TypeError`` names the config and the field; an int is accepted
    where a float is declared). Each field ``x`` gets a ``with_x(value)`` method returning a copy with
    that field changed. ``save``/``load`` write and read
    JSON, ``to_json``/``from_json`` do it in memory; nested configs, tuples, enums and variant families
    (``Initializer``, padding) round-trip. The repr is the JSON text, as Burn displays configs.

    Example:
        >>> class ModelConfig(Config):
        ...     num_classes: int
        ...     hidden_size: int
        ...     dropout: float = 0.5
        >>> config = ModelConfig(10, 512).with_dropout(0.2)
        >>> config.dropout
        0.2
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = vars(cls).get("__post_init__")
        if own is not None:
            # a config's own __post_init__ sees values of the declared types
            def __post_init__(self: Config) -> None:
                _check_field_types(self)
                own(self)

            __post_init__.__doc__ = own.__doc__
            cls.__post_init__ = __post_init__  # type: ignore[method-assign]
        dataclasses.dataclass(frozen=True, repr=False)(cls)

    def __post_init__(self) -> None:
        """Check each field's value against its annotation."""
        _check_field_types(self)

    def __getattr__(self, name: str) -> Callable[[Any], Any]:
        if name.startswith("with_"):
            field = name[5:]
            if field in {f.name for f in dataclasses.fields(self)}:  # type: ignore[arg-type]
                return lambda value: dataclasses.replace(self, **{field: value})  # type: ignore[type-var]
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-ready values."""
        return {f.name: _encode(getattr(self, f.name)) for f in dataclasses.fields(self)}  # type: ignore[arg-type]

    def to_json(self, indent: int | None = 2) -> str:
        """The config as JSON text."""
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls: type[C], values: dict[str, Any]) -> C:
        """The config from JSON-ready values (missing fields take their defaults).

        Raises:
            ConfigError: a required field is missing, a field is unknown, or a value has the wrong type.
        """
        return _decode(cls, values, cls.__name__)  # type: ignore[no-any-return]

    @classmethod
    def from_json(cls: type[C], text: str) -> C:
        """The config from JSON text."""
        try:
            values = json.loads(text)
        except json.JSONDecodeError as error:
            raise ConfigError(f"{cls.__name__}: not valid JSON: {error}") from None
        if not isinstance(values, dict):
            raise ConfigError(f"{cls.__name__}: expected a JSON object, got {type(values).__name__}")
        return cls.from_dict(values)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the config to ``path`` as JSON (through a temporary file, so a failed write leaves no
        partial file)."""
        target = Path(path)
        temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        try:
            temporary.write_text(self.to_json() + "\n", encoding="utf-8")
            os.replace(temporary, target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls: type[C], path: str | os.PathLike[str]) -> C:
        """Read a config saved by ``save``."""
        return cls.from_json(Path(path).read_text(encoding="utf-8"))

    def __repr__(self) -> str:
        return f"{type(self).__name__} {self.to_json()}"


# the resolved field annotations of each config class; None where they name what only type checkers see
_FIELD_HINTS: dict[type, dict[str, Any] | None] = {}


def _field_hints(cls: type) -> dict[str, Any] | None:
    if cls not in _FIELD_HINTS:
        try:
            _FIELD_HINTS[cls] = typing.get_type_hints(cls)
        except (NameError, TypeError):
            _FIELD_HINTS[cls] = None
    return _FIELD_HINTS[cls]


def _check_field_types(config: Config) -> None:
    """Raise a ``TypeError`` naming the config and the field whose value does not fit its annotation."""
    hints = _field_hints(type(config))
    if hints is None:
        return
    for field in dataclasses.fields(config):  # type: ignore[arg-type]
        mismatch = _mismatch(hints.get(field.name, Any), getattr(config, field.name), field.name)
        if mismatch is not None:
            raise TypeError(f"{type(config).__name__}: {mismatch}")


def _mismatch(annotation: Any, value: Any, where: str) -> str | None:
    """Where and how ``value`` does not fit the annotation (``None`` if it does): the item of a tuple
    or list at fault is named. What cannot be checked at run time (type variables, callables,
    protocols) fits, and so does a tuple of another length (the config's users say which lengths they
    take)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType) and isinstance(value, (tuple, list)):
        sequences = [option for option in args if typing.get_origin(option) in (tuple, list)]
        if len(sequences) == 1 and not _fits(annotation, value):
            return _mismatch(sequences[0], value, where)
    if origin in (tuple, list) and isinstance(value, (tuple, list)):
        if origin is tuple and args and args[-1] is not Ellipsis:
            items = list(zip(args, value))
        else:
            items = [(args[0] if args else Any, item) for item in value]
        for i, (item_annotation, item) in enumerate(items):
            found = _mismatch(item_annotation, item, f"{where}[{i}]")
            if found is not None:
                return found
        return None
    if _fits(annotation, value):
        return None
    return f"{where} must be {_type_name(annotation)}, got {value!r} ({type(value).__name__})"


def _fits(annotation: Any, value: Any) -> bool:
    if annotation is Any or annotation is object:
        return True
    if annotation is None or annotation is type(None):
        return value is None
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(option, value) for option in args)
    if origin is typing.Literal:
        # the value itself is the config's users' to check: they name the values allowed
        return any(type(value) is type(option) for option in args)
    if origin in (tuple, list):
        return isinstance(value, (tuple, list)) and _mismatch(annotation, value, "") is None
    if origin is dict:
        item = args[1] if len(args) == 2 else Any
        return isinstance(value, dict) and all(_fits(item, v) for v in value.values())
    if not isinstance(annotation, type) or origin is not None:
        return True
    if annotation is bool:
        return isinstance(value, bool)
    if annotation is int:
        return isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if annotation is float:
        return isinstance(value, numbers.Real) and not isinstance(value, bool)
    try:
        return isinstance(value, annotation)
    except TypeError:  # a protocol that is not runtime-checkable
        return True


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(option) for option in typing.get_args(annotation))
    if annotation is None or annotation is type(None):
        return "None"
    if isinstance(annotation, type) and origin is None:
        return f"{_article(annotation.__name__)} {annotation.__name__}"
    return re.sub(r"\b[\w.]+\.(\w+)", r"\1", str(annotation))  # without the modules' paths


def _article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" else "a"


def _encode(value: Any) -> Any:
    if isinstance(value, Config):
        return value.to_dict()
    if isinstance(value, enum.Enum):
        return value.name
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if any(base in _VARIANT_BASES for base in type(value).__mro__[1:]):
            return {type(value).__name__: fields}
        return fields
    if isinstance(value, (list, tuple)):
        return [_encode(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _encode(item) for key, item in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"Config: cannot write a {type(value).__name__} to JSON ({value!r})")


def _subclasses(base: type) -> dict[str, type]:
    found: dict[str, type] = {}
    pending: list[type] = [base]
    while pending:
        subclasses: list[type] = type.__subclasses__(pending.pop())
        for sub in subclasses:
            found[sub.__name__] = sub
            pending.append(sub)
    return found


def _decode(annotation: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(annotation)
    if annotation is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(annotation)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _decode(option, value, where)
            except ConfigError as error:
                errors.append(str(error))
        raise ConfigError(f"{where}: {value!r} fits none of {annotation}: " + "; ".join(errors))
    if origin in (tuple, list):
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        args = typing.get_args(annotation)
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(value):
                raise ConfigError(f"{where}: expected {len(args)} values, got {len(value)}")
            return tuple(_decode(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
        item = args[0] if args else Any
        items = [_decode(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected an object, got {value!r}")
        item = typing.get_args(annotation)[1] if typing.get_args(annotation) else Any
        return {key: _decode(item, v, f"{where}.{key}") for key, v in value.items()}
    if not isinstance(annotation, type):
        return value
    if issubclass(annotation, Config) or (
        dataclasses.is_dataclass(annotation) and annotation not in _VARIANT_BASES
    ):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: expected an object for {annotation.__name__}, got {value!r}")
        hints = typing.get_type_hints(annotation)
        fields = {f.name: f for f in dataclasses.fields(annotation)}  # type: ignore[arg-type]
        unknown = sorted(set(value) - set(fields))
        if unknown:
            raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)} for {annotation.__name__}")
        kwargs = {}
        for name, field in fields.items():
            if name in value:
                kwargs[name] = _decode(hints[name], value[name], f"{where}.{name}")
            elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                raise ConfigError(f"{where}: required field {name!r} of {annotation.__name__} is missing")
        return annotation(**kwargs)
    if annotation in _VARIANT_BASES:
        if not (isinstance(value, dict) and len(value) == 1):
            raise ConfigError(
                f"{where}: expected {{VariantName: {{...}}}} for {annotation.__name__}, got {value!r}"
            )
        ((name, content),) = value.items()
        kinds = _subclasses(annotation)
        if name not in kinds:
            raise ConfigError(f"{where}: {name!r} is not a {annotation.__name__}; one of {sorted(kinds)}")
        return _decode(kinds[name], content, f"{where}.{name}")
    if issubclass(annotation, enum.Enum):
        try:
            return annotation[value]
        except KeyError:
            raise ConfigError(f"{where}: {value!r} is not a {annotation.__name__}") from None
    if annotation is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if annotation in (bool, int, float, str) and not (
        isinstance(value, annotation) and not (annotation is int and isinstance(value, bool))
    ):
        raise ConfigError(f"{where}: expected {annotation.__name__}, got {value!r}")
    return value
