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
from burn_backend.kit import (
    CastStep,
    ElementwiseBlock,
    ElementwisePlan,
    ElementwiseStep,
    GivenUp,
    MatmulBlock,
    ReduceBlock,
    ReduceStep,
    RowLoop,
    TensorSpec,
    row_program,
    run_fused_op_by_op,
    run_op_by_op,
)

from . import _numba, _threads

if TYPE_CHECKING:
    from burn_backend import Backend

_VERSION = "3"  # part of every kernel's hash: bump when the generated code changes


def _helpers_digest() -> str:
    """The hash of ``_kernels.py``, part of every kernel's: numba's cache of a generated kernel checks
    the kernel's own file only, not the helpers (erf) it inlines, so a new release of them must give
    new kernel files."""
    return hashlib.sha256(Path(__file__).with_name("_kernels.py").read_bytes()).hexdigest()[:16]


_HELPERS = _helpers_digest()
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
    DType.F32: {"erf": "_k.erf32", "erfc": "_k.erfc32", "erfinv": "_k.erfinv32"},
    DType.F64: {"erf": "_k.erf64", "erfc": "_k.erfc64"},
}
_FLOAT_FUNCTIONS = {"mod": "_k.float_mod"}  # numba's np.mod loses the sign of a zero remainder
# NumPy's int rules where numba's functions and the processor differ: the minimum over -1 (a division
# traps on it), shift counts outside [0, 64), large unsigned signs, powers that overflow
_INT_FUNCTIONS = {
    "mod": "_k.int_mod", "floordiv": "_k.int_floordiv", "sign": "_k.int_sign", "pow": "_k.int_pow",
    "<<": "_k.left_shift", ">>": "_k.right_shift",
}  # fmt: skip

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


def _float_literal(numpy_name: str) -> Callable[[int | float], str]:
    def literal(value: int | float) -> str:
        return f"np.{numpy_name}({float(value)!r})"

    return literal


def _int_literal(value: int | float) -> str:
    return repr(int(value))


def _render(step: ElementwiseStep, values: Sequence[TensorSpec], scalars: Sequence[str]) -> str:
    """The expression of ``step`` on the variables ``v<ref>`` and the scalar parameters ``scalars``."""
    if isinstance(step, CastStep):
        return f"np.{step.dtype.numpy.name}(v{step.args[0]})"
    entry = step.entry
    dtype = values[step.args[0]].dtype
    functions = {**_FUNCTIONS, **_ERF.get(dtype, {})}
    functions.update(_FLOAT_FUNCTIONS if entry.kind is Kind.FLOAT else _INT_FUNCTIONS)
    literal = _float_literal(dtype.numpy.name) if entry.kind is Kind.FLOAT else _int_literal
    return entry.render([f"v{ref}" for ref in step.args] + list(scalars), functions, literal)


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
        count = _scalar_count(step)
        expression = _render(step, block.values, scalars[scalar_at : scalar_at + count])
        scalar_at += count
        body.append(f"v{n_in + position} = {expression}")
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
        if rank == 1 and loop == "prange":
            # the serial kernel on slices (see ``_kernels.CHUNK``: a loop from 0 vectorizes)
            sliced = [f"{out}[start:stop]" for out in outs]
            sliced += [f"in{j}[start:stop]" if flags[j][0] else f"in{j}" for j in range(n_in)]
            chunk = _kernels_module().CHUNK
            lines += [
                "    n = out0.shape[0]",
                f"    for c in prange((n + {chunk - 1}) // {chunk}):",
                f"        start, stop = c * {chunk}, min(n, (c + 1) * {chunk})",
                f"        serial({', '.join(sliced + scalars)})",
                "",
            ]
            continue
        if rank == 1:
            lines += ["    n = out0.shape[0]", "    for i in range(n):"]
            indent = "        "
        else:
            lines += [f"    n{d} = out0.shape[{d}]" for d in range(rank)]
            outer = " * ".join(f"n{d}" for d in range(rank - 1))
            # the outer index split into dims, each quotient a new name (numba's parfors refuse a
            # reassigned loop index)
            lines.append(f"    for o in {loop}({outer}):")
            quotient = "o"
            for d in range(rank - 2, 0, -1):
                lines += [f"        i{d} = {quotient} % n{d}", f"        q{d} = {quotient} // n{d}"]
                quotient = f"q{d}"
            lines += [f"        i0 = {quotient}", f"        for i{rank - 1} in range(n{rank - 1}):"]
            indent = "            "
        lines += [indent + line for line in body]
        lines.append("")
    return "\n".join(lines) + "\n"


def _load(source: str) -> Kernels:
    """The kernels of ``source``, from its file in the cache directory (written if missing)."""
    digest = hashlib.sha256((_VERSION + _HELPERS + source).encode()).hexdigest()[:24]
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


_FREE = 3  # references to an input nobody else holds: the caller's list, ``x`` and getrefcount's own


def _owned(inputs: Sequence[Any], donors: list[list[int]]) -> dict[int, int]:
    """Output -> input it may be written into: inputs that own their memory and that nobody but
    ``inputs`` references (a view of one holds a reference through ``.base``)."""
    taken: dict[int, int] = {}
    used: set[int] = set()
    for k, candidates in enumerate(donors):
        for j in candidates:
            if j in used:
                continue
            x = inputs[j]
            if (
                type(x) is np.ndarray
                and sys.getrefcount(x) <= _FREE
                and x.base is None
                and x.flags.c_contiguous
                and x.flags.writeable
            ):
                taken[k] = j
                used.add(j)
                break
    return taken


def _scalar_count(step: ElementwiseStep) -> int:
    return 0 if isinstance(step, CastStep) else step.entry.scalars


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
    bf16 or u64 value, outputs of different shapes).

    In-place reuse: called with ``GivenUp`` inputs, an output is written into an input array of its
    dtype and shape that nothing but that list references (its reference count says so: the decorator
    drops its own reference to an input read for the last time) and that owns its memory, instead of
    a new array. In the kernel each element is read before it is written, in the same iteration."""
    if not _compilable(block):
        return None
    layout = block.loop_layout()
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
    wide = total >= _kernels_parallel_min()
    views = [tuple(size if spans else 1 for size, spans in zip(sizes, flag)) for flag in flags]
    out_dtypes = [block.values[ref].dtype.numpy for ref in block.outputs]
    converters = _scalar_converters(block.steps, block.values)
    state = {"failed": False}
    # output k -> the inputs it may be written into
    donors = [
        [
            j
            for j, spec in enumerate(block.inputs)
            if spec.shape == shape and spec.dtype == block.values[ref].dtype
        ]
        for ref in block.outputs
    ]
    reusable = any(donors)

    def plan(inputs: Sequence[Any], scalars: Sequence[Any]) -> list[Any]:
        if not state["failed"]:
            taken = _owned(inputs, donors) if reusable and type(inputs) is GivenUp else {}
            arrays = [np.ascontiguousarray(x).reshape(view) for x, view in zip(inputs, views)]
            outputs = [
                arrays[taken[k]] if k in taken else np.empty(sizes, dtype)
                for k, dtype in enumerate(out_dtypes)
            ]
            values = [convert(value) for convert, value in zip(converters, scalars)]
            kernel = parallel if wide and _threads.numba_threads() > 1 else serial
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


def _kernels_module() -> Any:
    module = _numba.kernels()
    assert module is not None, "numba kernels are generated only where numba loads"
    return module


def _kernels_parallel_min() -> int:
    return int(_kernels_module().PARALLEL_MIN)


# -- reductions and matmuls ---------------------------------------------------------------------------


def _reduce_source(block: ReduceBlock, D: int, views: list[tuple[int, int, int]], A: int, B: int) -> str:
    """The kernels ``serial`` / ``parallel`` of a reduce block: one iteration per row (every index but
    the reduced dim's) running the block's row program (``burn_backend.kit.row_program``); values of the
    full shape live in registers within a loop and in a row buffer across loops, reductions accumulate in
    f64."""
    n_in = len(block.inputs)
    values = block.values
    program = row_program(block, views, D)
    index = {j: ("a" if views[j][0] == A else "0", "b" if views[j][2] == B else "0") for j in range(n_in)}
    scalar_names = [f"s{i}" for i in range(len(block.scalars))]
    expressions: dict[int, str] = {}
    scalar_at = 0
    for s, step in enumerate(block.steps):
        if isinstance(step, ReduceStep):
            continue
        count = _scalar_count(step)
        expressions[n_in + s] = _render(step, values, scalar_names[scalar_at : scalar_at + count])
        scalar_at += count

    code: list[str] = ["a = o // nB", "b = o - a * nB"]
    code += [f"buf{ref} = np.empty(nD, np.{values[ref].dtype.numpy.name})" for ref in program.kept]
    for item in program.items:
        if isinstance(item, RowLoop):
            body = []
            for k, kind, _ in item.reductions:
                code.append(f"acc{k} = -np.inf" if kind == "max" else f"acc{k} = 0.0")
            for entry in item.body:
                what = entry[0]
                if what == "input":
                    j = entry[1]
                    body.append(f"v{j} = in{j}[{index[j][0]}, j, {index[j][1]}]")
                elif what == "reload":
                    ref, o = entry[1], entry[2]
                    body.append(f"v{ref} = {f'buf{ref}[j]' if o is None else f'out{o}[a, j, b]'}")
                elif what == "step":
                    body.append(f"v{entry[1]} = {expressions[entry[1]]}")
                elif what == "fold":
                    k, ref = entry[1], entry[2]
                    if next(kind for r, kind, _ in item.reductions if r == k) == "max":
                        body += [f"if acc{k} == acc{k} and not v{ref} <= acc{k}:", f"    acc{k} = v{ref}"]
                    else:
                        body.append(f"acc{k} += v{ref}")
                elif what == "output":
                    body.append(f"out{entry[1]}[a, j, b] = v{entry[2]}")
                else:  # keep
                    body.append(f"buf{entry[1]}[j] = v{entry[1]}")
            code.append("for j in range(nD):")
            code.extend("    " + line for line in body)
            for k, kind, _ in item.reductions:
                cast = f"np.{values[k].dtype.numpy.name}"
                code.append(f"v{k} = {cast}(acc{k}" + (" / nD)" if kind == "mean" else ")"))
        elif item[0] == "input":
            j = item[1]
            code.append(f"v{j} = in{j}[{index[j][0]}, 0, {index[j][1]}]")
        elif item[0] == "step":
            code.append(f"v{item[1]} = {expressions[item[1]]}")
        else:  # an output of the reduced shape
            code.append(f"out{item[1]}[a, 0, b] = v{item[2]}")

    params = ", ".join(
        ["nA", "nD", "nB"]
        + [f"out{o}" for o in range(len(block.outputs))]
        + [f"in{j}" for j in range(n_in)]
        + scalar_names
    )
    lines = [
        "import numpy as np",
        "from numba import njit, prange",
        "from burn_ndarray import _kernels as _k",
        "",
    ]
    for name, loop_name, parallel in (("serial", "range", ""), ("parallel", "prange", ", parallel=True")):
        lines += [f"@njit(cache=True, error_model='numpy'{parallel})", f"def {name}({params}):"]
        lines.append(f"    for o in {loop_name}(nA * nB):")
        lines += ["        " + line for line in code]
        lines.append("")
    return "\n".join(lines) + "\n"


def _scalar_converters(steps: Sequence[Any], values: Sequence[TensorSpec]) -> list[Callable[[Any], Any]]:
    converters = []
    for step in steps:
        if isinstance(step, ElementwiseStep) and not isinstance(step, CastStep):
            entry = step.entry
            converters += [_converter(entry.kind, values[step.args[0]].dtype)] * entry.scalars
    return converters


def _compilable(block: ElementwiseBlock | ReduceBlock) -> bool:
    """Whether numba can compile ``block``: numba is there, every value's dtype is one it computes, and no
    erf/erfc reads an f64 (numba's are ~1e-10 off in the tails: op by op keeps f64 exact)."""
    if _numba.kernels() is None or any(spec.dtype not in _SUPPORTED for spec in block.values):
        return False
    return not any(
        isinstance(step, ElementwiseStep)
        and not isinstance(step, CastStep)
        and _uses_erf(step.entry.expression)
        and block.values[step.args[0]].dtype is DType.F64
        for step in block.steps
    )


def compile_reduce(backend: Backend, block: ReduceBlock) -> ElementwisePlan | None:
    """A numba plan computing a reduce block, or ``None`` (run it op by op)."""
    if not _compilable(block):
        return None
    layout = block.row_layout()
    if layout is None:
        return None
    A, D, B, views = layout
    try:
        serial, parallel = _load(_reduce_source(block, D, views, A, B))
    except Exception as error:
        _numba.disable(error)
        return None
    wide = _kernels_parallel_min() <= A * D * B and A * B > 1
    out_specs = [block.values[ref] for ref in block.outputs]
    out_views = [(A, D if spec.shape[block.dim] != 1 else 1, B) for spec in out_specs]
    converters = _scalar_converters(block.steps, block.values)
    state = {"failed": False}

    def plan(inputs: Sequence[Any], scalars: Sequence[Any]) -> list[Any]:
        if not state["failed"]:
            arrays = [np.ascontiguousarray(x).reshape(view) for x, view in zip(inputs, views)]
            outputs = [np.empty(view, spec.dtype.numpy) for view, spec in zip(out_views, out_specs)]
            values = [convert(value) for convert, value in zip(converters, scalars)]
            kernel = parallel if wide and _threads.numba_threads() > 1 else serial
            try:
                kernel(A, D, B, *outputs, *arrays, *values)
                return [out.reshape(spec.shape) for out, spec in zip(outputs, out_specs)]
            except Exception as error:
                state["failed"] = True
                import warnings

                warnings.warn(
                    f"burn_ndarray: a fused kernel failed ({error!r}); running it op by op", stacklevel=2
                )
        return run_fused_op_by_op(backend, block, inputs, scalars)

    return plan


def compile_matmul(backend: Backend, block: MatmulBlock) -> ElementwisePlan | None:
    """A plan for a matmul block: the product by the backend's own matmul (BLAS), then the epilogue as
    one numba kernel written into the product's buffer (it is nobody else's)."""
    # the product is nobody else's: the epilogue's output is written into it
    epilogue = compile_block(backend, block.epilogue)
    if epilogue is None:
        return None
    matmul = backend.float_matmul

    def plan(inputs: Sequence[Any], scalars: Sequence[Any]) -> Sequence[Any]:
        return epilogue(GivenUp([matmul(inputs[0], inputs[1]), *inputs[2:]]), scalars)

    return plan
