"""Code generation: an ONNX model as readable Python source of a ``Module`` class (one line per
operation, Burn's ``ModelGen`` route) plus its weights as a burn-record file.

The generated ``forward`` calls ``burn_import.onnx.run_op`` for each node, the same operator table
``load`` runs, so both routes give the same outputs; the parameters are ``Param``s in a ``weights``
dict and large constants are ``RunningState`` in ``buffers`` (recorded, not counted as parameters),
both filled from the record file.
"""

from __future__ import annotations

import builtins
import keyword
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from burn_backend import Device, DType, Kind, Tensor, default_device
from burn_nn import Module, Param, RunningState

from ._errors import OnnxImportError
from ._ir import Graph
from ._limits import OnnxLimits
from ._reader import read_model
from ._runtime import param_field
from .ops._registry import to_tensor

__all__ = ["ModelGen", "generate"]

_INLINE_LIMIT = 64
_LINE = 100


class _Weights(Module):
    """The record layout of a generated module: ``weights`` (``Param``s) and ``buffers``
    (``RunningState``) dicts."""

    def __init__(self, weights: dict[str, Param], buffers: dict[str, RunningState]) -> None:
        self.weights = weights
        self.buffers = buffers


# names the generated module binds itself (imports, module constants, ``__init__``'s locals): a value
# named after one of them would shadow it
_MODULE_NAMES = frozenset(
    {"annotations", "os", "Path", "Any", "Device", "Tensor", "default_device", "op", "Module", "Param"}
    | {
        "np",
        "WEIGHTS",
        "GRAPH_NAME",
        "INPUT_NAMES",
        "OUTPUT_NAMES",
        "_zeros",
        "_state",
        "self",
        "cls",
        "device",
    }
    | {"weights", "loaded", "path", "NamedMpkFileRecorder", "RunningState"}
)
_RESERVED = _MODULE_NAMES | frozenset(dir(builtins)) | frozenset(keyword.kwlist) | {"_"}


def _identifier(name: str, taken: set[str], prefix: str = "v_") -> str:
    """A Python identifier for the file-given ``name``: ASCII letters, digits and underscores only
    (non-ASCII letters would be NFKC-normalised by Python, so two names could become one), never a
    keyword, builtin or name the generated module uses, and unique within ``taken`` (added to it)."""
    base = prefix + re.sub(r"[^0-9A-Za-z_]", "_", name)
    if not base or base[0].isdigit():
        base = "v_" + base
    if base in _RESERVED:
        base += "_"
    candidate, i = base, 1
    while candidate in taken or candidate in _RESERVED:
        candidate = f"{base}_{i}"
        i += 1
    taken.add(candidate)
    return candidate


def _field(name: str, taken: set[str]) -> str:
    """The record field of an initializer: ``param_field`` of its name, made unique within ``taken``
    (``w.1`` and ``w_1`` both sanitize to ``w_1``: the second becomes ``w_1_1``)."""
    base = field = param_field(name)
    i = 1
    while field in taken:
        field = f"{base}_{i}"
        i += 1
    taken.add(field)
    return field


def _string(text: str) -> str:
    """``text`` as a double-quoted Python string literal of ASCII characters only: the one form a string
    from the file takes in generated source (quotes and backslashes escaped, every other character
    outside printable ASCII written as its ``\\x``/``\\u``/``\\U`` escape)."""
    out = []
    for char in str(text):
        if char in '"\\':
            out.append("\\" + char)
        elif " " <= char <= "~":
            out.append(char)
        else:
            out.append(ascii(char)[1:-1])  # one escape sequence, never a quote
    return '"' + "".join(out) + '"'


def _literal(value: Any) -> str:
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise OnnxImportError(f"generate: a constant of dtype {value.dtype} cannot be written as source")
        return f"np.array({_literal(value.tolist())}, dtype=np.{value.dtype.name})"
    if isinstance(value, float):
        if np.isnan(value):
            return 'float("nan")'
        if np.isinf(value):
            return 'float("inf")' if value > 0 else '-float("inf")'
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    if isinstance(value, (int, str, bool)) or value is None:
        return _string(value) if isinstance(value, str) else repr(value)
    raise OnnxImportError(
        f"generate: attribute value of type {type(value).__name__} cannot be written as source"
    )


def _call(target: str, callee: str, args: list[str], indent: str) -> list[str]:
    one = f"{indent}{target} = {callee}({', '.join(args)})"
    if len(one) <= _LINE:
        return [one]
    inner = indent + "    "
    return [f"{indent}{target} = {callee}(", *[f"{inner}{a}," for a in args], f"{indent})"]


def generate(
    model: Any,
    out_dir: str | os.PathLike[str],
    *,
    name: str | None = None,
    class_name: str = "Model",
    limits: OnnxLimits | None = None,
) -> tuple[Path, Path]:
    """Write ``model`` as Python source and a weights record into ``out_dir``.

    Args:
        model: a ``.onnx`` path, its bytes, an ``onnx.ModelProto`` or an IR ``Graph``.
        out_dir: the folder to write into (made if missing).
        name: the file stem (default: the model file's stem, or ``"model"``).
        class_name: the name of the generated ``Module`` class.
        limits: the bounds on sizes, node counts and nesting while reading (``OnnxLimits()``).

    Returns:
        The paths of the source file (``<name>.py``) and of the record (``<name>.mpk``,
        ``burn_record.NamedMpkFileRecorder``).

    Raises:
        OnnxImportError: the graph uses control flow (``If``, ``Loop``, ``Scan``), which only ``load``
            runs; the file is malformed or over a limit of ``limits``.

    Example:
        >>> source, weights = generate("resnet.onnx", "generated")  # doctest: +SKIP
        >>> from generated.resnet import Model  # doctest: +SKIP
        >>> model = Model.load(weights, device)  # doctest: +SKIP
    """
    from burn_record import NamedMpkFileRecorder

    graph = model if isinstance(model, Graph) else read_model(model, limits=limits)
    for _, node in graph.walk():
        if node.subgraphs():
            raise OnnxImportError(
                f"generate: {node.describe()} holds a subgraph; control flow is run by "
                "burn_import.onnx.load, not generated"
            )
    stem = name or (Path(str(model)).stem if isinstance(model, (str, os.PathLike)) else "model")
    stem = re.sub(r"[^0-9A-Za-z_]", "_", stem) or "model"
    if not (class_name.isascii() and class_name.isidentifier()) or class_name in _RESERVED:
        raise OnnxImportError(
            f"generate: class_name {class_name!r} is not a Python identifier free to use "
            "(ASCII letters, digits, underscores; not a keyword, builtin or name the module uses)"
        )
    source, weights = _source(graph, class_name, stem)  # everything that can fail, before any write
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    weights_path = NamedMpkFileRecorder().save(weights.into_record(), out / stem)
    source_path = out / f"{stem}.py"
    partial = out / f".{stem}.py.partial"
    partial.write_text(source)
    os.replace(partial, source_path)  # the source appears whole or not at all
    return source_path, Path(weights_path)


def _source(graph: Graph, class_name: str, stem: str) -> tuple[str, _Weights]:
    # every string from the file reaches the source only as a ``_string`` literal or through
    # ``_identifier``/``_field`` (ASCII letters, digits, underscores): never inside a docstring
    device = default_device()
    taken: set[str] = {class_name}
    var: dict[str, str] = {}
    param_lines: list[str] = []
    buffer_lines: list[str] = []
    const_lines: list[str] = []
    params: dict[str, Param] = {}
    buffers: dict[str, RunningState] = {}
    param_fields: set[str] = set()
    buffer_fields: set[str] = set()
    for onnx_name in graph.params:
        array = graph.initializers[onnx_name]
        field = _field(onnx_name, param_fields)
        params[field] = Param.initialized(to_tensor(array, device))
        param_lines.append(
            f"            {_string(field)}: _zeros({list(array.shape)}, {_string(_dtype(array))}, device),"
        )
        var[onnx_name] = f"self.weights[{_string(field)}].val()" + _restore(array)
    for onnx_name, array in graph.constants.items():
        if array.size > _INLINE_LIMIT:
            field = _field(onnx_name, buffer_fields)
            buffers[field] = RunningState(to_tensor(array, device))
            shape, dtype = list(array.shape), _string(_dtype(array))
            buffer_lines.append(f"            {_string(field)}: _state({shape}, {dtype}, device),")
            var[onnx_name] = f"self.buffers[{_string(field)}].value()" + _restore(array)
        else:
            ident = _identifier(onnx_name, taken, "c_")
            const_lines.append(f"        self.{ident} = {_literal(array)}")
            var[onnx_name] = f"self.{ident}"
    inputs = [
        _identifier(n, taken, "") if n.isascii() and n.isidentifier() else _identifier(n, taken, "x_")
        for n in graph.inputs
    ]
    for onnx_name, ident in zip(graph.inputs, inputs):
        var[onnx_name] = ident
    body: list[str] = []
    for node in graph.nodes:
        args = [_string(node.op_type)] + [var[i] if i else "None" for i in node.inputs]
        if node.domain:
            args.append(f"domain={_string(node.domain)}")
        args.append(f"opset={int(node.opset)}")
        if len(node.outputs) > 1:
            args.append(f"outputs={len(node.outputs)}")
        for key, value in sorted(node.attrs.items()):
            if key.isascii() and key.isidentifier() and not keyword.iskeyword(key):
                args.append(f"{key}={_literal(value)}")
            else:
                args.append(f"**{{{_string(key)}: {_literal(value)}}}")
        outs = [_identifier(o, taken) if o else "_" for o in node.outputs]
        for onnx_name, ident in zip(node.outputs, outs):
            if onnx_name:
                var[onnx_name] = ident
        body.extend(_call(", ".join(outs), "op", args, "        "))
    results = [var[o] for o in graph.outputs]
    returns = results[0] if len(results) == 1 else "(" + ", ".join(results) + ")"
    signature = ", ".join(f"{i}: Tensor" for i in inputs)
    lines = [
        f'"""{class_name}: generated by burn_import.onnx from the ONNX graph ``GRAPH_NAME``; do not edit.',
        "",
        f"``{class_name}(device)`` has the weights written next to this file ({stem}.mpk);",
        f'``{class_name}.load("other.mpk", device)`` reads others of the same layout.',
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import os",
        "from pathlib import Path",
        "from typing import Any",
        "",
        # one block, as a linter sorts it where burn and numpy are both installed packages
        "from burn_backend import Device, Tensor, default_device",
        "from burn_import.onnx import run_op as op",
        "from burn_nn import Module, Param, RunningState",
        *(["import numpy as np"] if any("np." in line for line in const_lines + body) else []),
        "",
        f"WEIGHTS = Path(__file__).with_name({_string(stem + '.mpk')})",
        '"""The weights generated with this source."""',
        f"GRAPH_NAME = {_string(graph.name)}",
        '"""The name of the ONNX graph."""',
        f"INPUT_NAMES = {_literal(list(graph.inputs))}",
        '"""The ONNX names of ``forward``\'s arguments, in order."""',
        f"OUTPUT_NAMES = {_literal(list(graph.outputs))}",
        '"""The ONNX names of ``forward``\'s results, in order."""',
        "",
        "",
        "def _zeros(shape: list[int], dtype: str, device: Device) -> Param:",
        "    return Param.initialized(Tensor.zeros(shape, device, dtype))",
        "",
        "",
        "def _state(shape: list[int], dtype: str, device: Device) -> RunningState:",
        "    return RunningState(Tensor.zeros(shape, device, dtype))",
        "",
        "",
        f"class {class_name}(Module):",
        '    """The ONNX graph ``GRAPH_NAME`` as a module: ``forward`` takes the values named in',
        '    ``INPUT_NAMES`` and returns those named in ``OUTPUT_NAMES``."""',
        "",
        "    def __init__(",
        "        self, device: Device | None = None, weights: str | os.PathLike[str] | None = WEIGHTS",
        "    ) -> None:",
        '        """The module on ``device`` with the ``weights`` record (``None``: zeros)."""',
        "        device = device or default_device()",
        *_dict_lines("        self.weights: dict[str, Param] = ", param_lines),
        *_dict_lines("        self.buffers: dict[str, RunningState] = ", buffer_lines),
        *const_lines,
        "        if weights is not None:",
        "            from burn_record import NamedMpkFileRecorder",
        "",
        "            loaded = self.load_file(weights, NamedMpkFileRecorder())",
        "            self.weights, self.buffers = loaded.weights, loaded.buffers",
        "",
        "    @classmethod",
        f"    def load(cls, path: str | os.PathLike[str], device: Device | None = None) -> {class_name}:",
        '        """The module with the weights of the record at ``path`` (NamedMpkFileRecorder)."""',
        "        return cls(device, path)",
        "",
        f"    def forward(self, {signature}) -> Any:",
        '        """Run the graph."""',
        *body,
        f"        return {returns}",
        "",
    ]
    return "\n".join(lines), _Weights(params, buffers)


def _dict_lines(head: str, entries: list[str]) -> list[str]:
    """A dict literal's lines, written as a formatter writes them: ``{}`` when empty."""
    return [head + "{}"] if not entries else [head + "{", *entries, "        }"]


def _restore(array: np.ndarray[Any, Any]) -> str:
    """The cast that gives a weight back its dtype where the record converts it (full precision
    stores floats as f32 and signed ints as i32, which load as the backend's defaults): the int8
    weights of a quantized model, f64 or f16 initializers."""
    dtype = DType.of(array.dtype)
    kept = dtype == DType.F32 or dtype.kind is Kind.BOOL or (dtype.kind is Kind.INT and not dtype.is_signed)
    return "" if kept else f".cast({_string(dtype.value)})"


def _dtype(array: np.ndarray[Any, Any]) -> str:
    return DType.of(array.dtype).value


def run_generated(module: Module, *inputs: Any, device: Device | None = None) -> Any:
    """Call a generated module on NumPy arrays or tensors (arrays go to ``device``)."""
    device = device or default_device()
    tensors = [x if isinstance(x, Tensor) else to_tensor(np.asarray(x), device) for x in inputs]
    return module(*tensors)


class ModelGen:
    """Burn's ``ModelGen`` builder: generate the source and weights of ONNX models into a folder that
    Python imports as a package (``out_dir("model/")`` -> ``from model.mnist import Model``).

    Example:
        >>> ModelGen().input("src/model/mnist.onnx").out_dir("model/").run_from_script()  # doctest: +SKIP
    """

    def __init__(self) -> None:
        self._inputs: list[Path] = []
        self._out_dir: Path | None = None
        self._class_name = "Model"
        self._limits: OnnxLimits | None = None

    def input(self, path: str | os.PathLike[str]) -> ModelGen:
        """Add an ONNX file to generate (each becomes ``<out_dir>/<stem>.py`` and ``.mpk``)."""
        self._inputs.append(Path(path))
        return self

    def out_dir(self, path: str | os.PathLike[str]) -> ModelGen:
        """The folder to write into (relative to the working directory; made if missing)."""
        self._out_dir = Path(path)
        return self

    def class_name(self, name: str) -> ModelGen:
        """The generated ``Module`` classes' name (default ``Model``)."""
        self._class_name = name
        return self

    def limits(self, limits: OnnxLimits) -> ModelGen:
        """The bounds on sizes, node counts and nesting while reading the inputs (``OnnxLimits()``)."""
        self._limits = limits
        return self

    def development(self, enabled: bool) -> ModelGen:
        """Accepted for Burn's API; the generated source is always readable."""
        del enabled
        return self

    def run_from_script(self) -> list[tuple[Path, Path]]:
        """Generate every input; the folder gets an ``__init__.py`` so that it imports as a package.

        Returns:
            The (source, weights) paths per input.

        Raises:
            OnnxImportError: no input or no output folder was given, or a model cannot be generated.
        """
        if not self._inputs or self._out_dir is None:
            raise OnnxImportError("ModelGen: give at least one .input(...) and an .out_dir(...)")
        written = [
            generate(path, self._out_dir, class_name=self._class_name, limits=self._limits)
            for path in self._inputs
        ]
        init = self._out_dir / "__init__.py"
        if not init.exists():
            init.write_text('"""Models generated by burn_import.onnx.ModelGen."""\n')
        return written

    run_from_cli = run_from_script
