"""NdArray's fusion compiler: an ``ElementwiseBlock`` becomes one numba kernel.

Each step's expression is rendered from the op table (``ElementwiseOp.render``) into Python that numba
compiles: NumPy's scalar ufuncs for the expression functions (the table defines them by NumPy), erf and
erfc from ``_kernels``, literals and scalars of the operands' dtype (so f32 chains compute in f32 and
vectorize). The output shape is walked with its dims of size 1 dropped and adjacent dims of the same
broadcast pattern merged, so a chain over ``[64, 128, 28, 28]`` with a per-channel operand becomes a loop
over ``[64, 128, 784]``; the outer dims are split over the cores for large outputs.

The kernel's source depends on the block's ops, dtypes and broadcast pattern, not its sizes: it is
written once to a file of the user's cache directory (``BURN_NDARRAY_CACHE_DIR``, else
``$XDG_CACHE_HOME/burn/ndarray-kernels``) named by its hash, and numba caches the machine code beside
it, so a new process loads compiled kernels instead of compiling them.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from burn_backend import DType, Kind
from burn_backend.kit import ElementwiseBlock, ElementwisePlan, run_op_by_op

from . import _numba

if TYPE_CHECKING:
    from burn_backend import Backend

_VERSION = "1"  # part of every kernel's hash: bump when the generated code changes
_SUPPORTED = frozenset(
    {
        DType.F32,
        DType.F64,
        DType.I64,
        DType.I32,
        DType.I16,
        DType.I8,
        DType.U32,
        DType.U16,
        DType.U8,
        DType.BOOL,
    }
)
_FUNCTIONS = {
    "abs": "np.abs", "sign": "np.sign", "sqrt": "np.sqrt", "exp": "np.exp", "log": "np.log",
    "log1p": "np.log1p", "sin": "np.sin", "cos": "np.cos", "tan": "np.tan", "sinh": "np.sinh",
    "cosh": "np.cosh", "tanh": "np.tanh", "asin": "np.arcsin", "acos": "np.arccos", "atan": "np.arctan",
    "asinh": "np.arcsinh", "acosh": "np.arccosh", "atanh": "np.arctanh", "atan2": "np.arctan2",
    "hypot": "np.hypot", "pow": "np.power", "floor": "np.floor", "ceil": "np.ceil", "trunc": "np.trunc",
    "rint": "np.rint", "min": "np.minimum", "max": "np.maximum", "mod": "np.mod",
    "floordiv": "np.floor_divide", "where": "_k.where", "isnan": "np.isnan", "isinf": "np.isinf",
    "logical_not": "np.logical_not",
}  # fmt: skip
_ERF = {
    DType.F32: {"erf": "_k.erf32", "erfc": "_k.erfc32"},
    DType.F64: {"erf": "_k.erf64", "erfc": "_k.erfc64"},
}
_CHUNK = 4096

Kernels = tuple[Callable[..., None], Callable[..., None]]  # (serial, parallel)
_lock = threading.Lock()
_kernels: dict[str, Kernels] = {}


def cache_dir() -> Path:
    """Where generated kernel sources (and numba's cache of their machine code) are kept."""
    configured = os.environ.get("BURN_NDARRAY_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "burn" / "ndarray-kernels"


def _layout(block: ElementwiseBlock) -> tuple[tuple[int, ...], list[tuple[bool, ...]]] | None:
    """The output shape with size-1 dims dropped and same-pattern neighbours merged, and whether each
    input spans each of those dims (False: broadcast along it); ``None`` if the outputs differ in shape."""
    shapes = {block.values[ref].shape for ref in block.outputs}
    if len(shapes) != 1:
        return None
    (shape,) = shapes
    sizes: list[int] = []
    patterns: list[tuple[bool, ...]] = []
    for d, size in enumerate(shape):
        if size == 1:
            continue
        pattern = tuple(spec.shape[d] != 1 for spec in block.inputs)
        if patterns and patterns[-1] == pattern:
            sizes[-1] *= size
        else:
            sizes.append(size)
            patterns.append(pattern)
    if not sizes:
        sizes, patterns = [1], [tuple(True for _ in block.inputs)]
    flags = [tuple(pattern[i] for pattern in patterns) for i in range(len(block.inputs))]
    return tuple(sizes), flags


def _float_literal(numpy_name: str) -> Callable[[int | float], str]:
    def literal(value: int | float) -> str:
        return f"np.{numpy_name}({float(value)!r})"

    return literal


def _int_literal(value: int | float) -> str:
    return repr(int(value))


def _source(block: ElementwiseBlock, rank: int, flags: list[tuple[bool, ...]]) -> str:
    """The Python source of the kernel pair ``serial`` / ``parallel`` for ``block``."""
    n_in = len(block.inputs)
    outs = [f"out{k}" for k in range(len(block.outputs))]
    ins = [f"in{j}" for j in range(n_in)]
    scalars = [f"s{k}" for k in range(len(block.scalars))]
    index = "i" if rank == 1 else ", ".join(f"i{d}" for d in range(rank))
    body = []
    for j in range(n_in):
        load = ", ".join((f"i{d}" if rank > 1 else "i") if flags[j][d] else "0" for d in range(rank))
        body.append(f"v{j} = in{j}[{load}]")
    scalar_at = 0
    for position, step in enumerate(block.steps):
        entry = step.entry
        dtype = block.values[step.args[0]].dtype
        functions = {**_FUNCTIONS, **_ERF.get(dtype, {})}
        literal = _float_literal(dtype.numpy.name) if entry.kind is Kind.FLOAT else _int_literal
        operands = [f"v{ref}" for ref in step.args] + scalars[scalar_at : scalar_at + entry.scalars]
        scalar_at += entry.scalars
        body.append(f"v{n_in + position} = {entry.render(operands, functions, literal)}")
    body += [f"{out}[{index}] = v{ref}" for out, ref in zip(outs, block.outputs)]
    params = ", ".join(outs + ins + scalars)
    lines = [
        "import numpy as np",
        "from numba import njit, prange",
        "from burn_ndarray import _kernels as _k",
        "",
    ]
    for name, loop in (("serial", "range"), ("parallel", "prange")):
        decorator = "@njit(cache=True, error_model='numpy'" + (
            ", parallel=True)" if loop == "prange" else ")"
        )
        lines += [decorator, f"def {name}({params}):"]
        if rank == 1:
            lines.append("    n = out0.shape[0]")
            if loop == "prange":
                lines += [
                    f"    for c in prange((n + {_CHUNK - 1}) // {_CHUNK}):",
                    f"        for i in range(c * {_CHUNK}, min(n, (c + 1) * {_CHUNK})):",
                ]
                indent = "            "
            else:
                lines.append("    for i in range(n):")
                indent = "        "
        else:
            lines += [f"    n{d} = out0.shape[{d}]" for d in range(rank)]
            outer = " * ".join(f"n{d}" for d in range(rank - 1))
            lines += [f"    for o in {loop}({outer}):", "        r = o"]
            for d in range(rank - 2, 0, -1):
                lines += [f"        i{d} = r % n{d}", f"        r = r // n{d}"]
            lines += ["        i0 = r", f"        for i{rank - 1} in range(n{rank - 1}):"]
            indent = "            "
        lines += [indent + line for line in body]
        lines.append("")
    return "\n".join(lines) + "\n"


def _load(source: str) -> Kernels:
    """The kernels of ``source``, from its file in the cache directory (written if missing)."""
    digest = hashlib.sha256((_VERSION + source).encode()).hexdigest()[:24]
    with _lock:
        found = _kernels.get(digest)
        if found is not None:
            return found
        directory = cache_dir()
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError:
            directory = Path(tempfile.gettempdir()) / "burn-ndarray-kernels"
            directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"k_{digest}.py"
        if not path.exists() or path.read_text() != source:
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(source)
            os.replace(temporary, path)
        name = f"burn_ndarray_kernels.k_{digest}"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        found = _kernels[digest] = (module.serial, module.parallel)
        return found


def _uses_erf(expression: str) -> bool:
    return "erf" in expression


def _converter(kind: Kind, dtype: DType) -> Callable[[Any], Any]:
    if kind is Kind.FLOAT:
        return dtype.numpy.type
    if kind is Kind.BOOL:
        return bool
    return int


def compile_block(backend: Backend, block: ElementwiseBlock) -> ElementwisePlan | None:
    """A numba plan computing ``block``, or ``None`` where it cannot be compiled (numba missing, an f16,
    bf16 or u64 value, outputs of different shapes)."""
    if _numba.kernels() is None or any(spec.dtype not in _SUPPORTED for spec in block.values):
        return None
    if any(
        _uses_erf(step.entry.expression) and block.values[step.args[0]].dtype is DType.F64
        for step in block.steps
    ):
        return None  # numba's f64 erf/erfc are ~1e-10 off in the tails: op by op keeps f64 exact
    layout = _layout(block)
    if layout is None:
        return None
    sizes, flags = layout
    try:
        serial, parallel = _load(_source(block, len(sizes), flags))
    except Exception as error:  # numba present but unable to load the module: NumPy from now on
        _numba.disable(error)
        return None
    shape = block.values[block.outputs[0]].shape
    total = math.prod(shape)
    kernel = parallel if total >= _kernels_parallel_min() else serial
    views = [tuple(size if spans else 1 for size, spans in zip(sizes, flag)) for flag in flags]
    out_dtypes = [block.values[ref].dtype.numpy for ref in block.outputs]
    converters = []
    for step in block.steps:
        entry = step.entry
        converter = _converter(entry.kind, block.values[step.args[0]].dtype)
        converters += [converter] * entry.scalars
    state = {"failed": False}

    def plan(inputs: Sequence[Any], scalars: Sequence[Any]) -> list[Any]:
        if not state["failed"]:
            arrays = [np.ascontiguousarray(x).reshape(view) for x, view in zip(inputs, views)]
            outputs = [np.empty(sizes, dtype) for dtype in out_dtypes]
            values = [convert(value) for convert, value in zip(converters, scalars)]
            try:
                kernel(*outputs, *arrays, *values)
                return [out.reshape(shape) for out in outputs]
            except Exception as error:  # a typing error in generated code: this block runs op by op
                state["failed"] = True
                import warnings

                warnings.warn(
                    f"burn_ndarray: a fused kernel failed ({error!r}); running it op by op", stacklevel=2
                )
        return run_op_by_op(backend, block, inputs, scalars)

    return plan


def _kernels_parallel_min() -> int:
    module = _numba.kernels()
    return int(module.PARALLEL_MIN) if module is not None else 1 << 16
