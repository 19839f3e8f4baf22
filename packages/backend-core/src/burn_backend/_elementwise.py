"""The element-wise op table: every element-wise op of the backend interface, declared once.

An ``ElementwiseOp`` names an interface method (``float_add``, ``int_greater_elem``, ``relu``), counts
its tensor and scalar operands, says whether its result is of the operands' kind or Bool, and gives its
value twice: as an ``expression`` that code generators translate (``ElementwiseOp.render``: the CUDA
backend's vectorized kernels, the compilers behind the fusion compile hook) and as a NumPy
``reference`` that the conformance suite checks every backend against (``burn_backend.testing``
parametrizes its element-wise tests from this table), at special values too: IEEE 754's infinities, NaN
and signed zeros, and the int dtypes' extremes. The reference is the required value everywhere except
in the groups of ``burn_backend.testing.IMPLEMENTATION_DEFINED`` (an int division by zero, signed
overflow, shifts outside ``[0, bits)``), where C, NumPy and PyTorch disagree: there NumPy's value is
what NdArray and Cuda give, and another backend may declare the group and give its own.
``ELEMENTWISE_OPS`` maps each method name to its entry; declaring a new element-wise op is one
``_op(...)`` line below, and the suite then tests it.

The expression language is the part of C and Python that means the same in both, so a generator for
either emits it as it is (``render`` adds the parentheses that make precedence explicit):

- operands ``{0}``, ``{1}``, ... in the order of the interface method's parameters (tensors first,
  then scalars);
- number literals (``0``, ``0.5``), of the operands' dtype in generated code;
- ``+ - *`` and unary ``-``; ``/`` on floats only; comparisons ``== != < <= > >=`` (one per
  comparison, no chains); ``& | ^ ~ << >>`` on ints, ``& | ^`` on bools;
- calls of the functions in ``EXPRESSION_FUNCTIONS``, defined by their NumPy implementations: ``min``
  and ``max`` propagate NaN, ``rint`` rounds half to even, ``mod`` takes the divisor's sign, ``floordiv``
  floors, ``where(c, a, b)`` selects.

The fusion IR (``burn_backend.ElementwiseBlock``) names its steps by these entries, so the set of ops a
fuser may defer is this table, and a backend's compiler translates a block by rendering each step's
expression.
"""

from __future__ import annotations

import ast
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from ._dtype import Kind

Range = tuple[float, float]

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
_SQRT_PI_2 = math.sqrt(math.pi) / 2


def _erfinv_scalar(y: float) -> float:
    """The inverse error function of ``y`` to double precision: Newton's method on ``math.erf`` (on
    ``math.erfc(x) = 1 - |y|`` in the tails, where ``erf(x) - y`` would cancel) from Winitzki's
    approximation."""
    if math.isnan(y) or abs(y) > 1:
        return math.nan
    if abs(y) == 1:
        return math.copysign(math.inf, y)
    if y == 0:
        return y
    a = abs(y)
    ln = math.log((1 - a) * (1 + a))
    t = 2 / (math.pi * 0.147) + ln / 2
    x = math.sqrt(math.sqrt(t * t - ln / 0.147) - t)
    for _ in range(6):
        residual = math.erf(x) - a if a <= 0.5 else (1 - a) - math.erfc(x)
        x -= residual * _SQRT_PI_2 * math.exp(x * x)
    return math.copysign(x, y)


_erfinv = np.vectorize(_erfinv_scalar, otypes=[np.float64])

EXPRESSION_FUNCTIONS: Mapping[str, Callable[..., Any]] = MappingProxyType(
    {
        "abs": np.abs,
        "sign": np.sign,
        "sqrt": np.sqrt,
        "exp": np.exp,
        "log": np.log,
        "log1p": np.log1p,
        "sin": np.sin,
        "cos": np.cos,
        "tan": np.tan,
        "sinh": np.sinh,
        "cosh": np.cosh,
        "tanh": np.tanh,
        "asin": np.arcsin,
        "acos": np.arccos,
        "atan": np.arctan,
        "asinh": np.arcsinh,
        "acosh": np.arccosh,
        "atanh": np.arctanh,
        "atan2": np.arctan2,
        "hypot": np.hypot,
        "pow": np.power,
        "erf": _erf,
        "erfc": _erfc,
        "erfinv": _erfinv,
        "floor": np.floor,
        "ceil": np.ceil,
        "trunc": np.trunc,
        "rint": np.rint,
        "min": np.minimum,
        "max": np.maximum,
        "mod": np.mod,
        "floordiv": np.floor_divide,
        "where": np.where,
        "isnan": np.isnan,
        "isinf": np.isinf,
        "logical_not": np.logical_not,
    }
)
"""The functions an expression may call, by name, with the NumPy function that defines each."""

_BINARY_OPERATORS: dict[type[ast.operator], str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/",
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>",
}  # fmt: skip
_UNARY_OPERATORS: dict[type[ast.unaryop], str] = {ast.USub: "-", ast.Invert: "~"}
_COMPARISONS: dict[type[ast.cmpop], str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
}  # fmt: skip


@dataclass(frozen=True)
class ElementwiseOp:
    """One element-wise op of the backend interface.

    Attributes:
        name: the interface method (``"float_add_scalar"``).
        kind: the kind of its tensor operands.
        arity: how many tensor operands it takes (1 or 2), first in its parameters.
        scalars: how many scalar operands follow them (``float_add_scalar``: 1, ``float_clamp``: 2).
        expression: its value in the expression language (module docstring): ``"{0} + {1}"``.
        reference: its value in NumPy: called with the operands (tensors as float64, int64 or bool
            arrays, scalars as Python numbers); the conformance suite checks backends against it.
        bool_result: whether the result is Bool (comparisons, ``is_nan``) rather than of ``kind``.
        broadcasts: whether its tensor operands may differ in dims of size 1 (the interface's binary
            ops); the activations' backward ops take operands of one shape.
        tensor_form: for a scalar form (``float_add_scalar``), the op taking tensors only.
        scalar_form: for an op with a scalar form (``float_add``), that form.
        domain: one ``(low, high)`` per operand: where the op is well conditioned and its result fits
            every dtype of ``kind``; the conformance suite draws inputs there.
        tolerance_scale: how much the op may amplify its inputs' rounding over ``domain`` (a factor
            of the dtype's tolerance).

    Example:
        >>> op = ELEMENTWISE_OPS["float_mul_scalar"]
        >>> (op.arity, op.scalars, op.tensor_form, op.render(["x", "s"]))
        (1, 1, 'float_mul', 'x * s')
    """

    name: str
    kind: Kind
    arity: int
    scalars: int
    expression: str
    reference: Callable[..., Any]
    bool_result: bool = False
    broadcasts: bool = True
    tensor_form: str | None = None
    scalar_form: str | None = None
    domain: tuple[Range, ...] = ()
    tolerance_scale: float = 1.0

    def __post_init__(self) -> None:
        _parse(self.expression, self.operands)
        if len(self.domain) != self.operands:
            raise ValueError(f"{self.name}: {len(self.domain)} domain ranges for {self.operands} operands")

    @property
    def operands(self) -> int:
        """How many operands it takes: tensors and scalars."""
        return self.arity + self.scalars

    @property
    def result_kind(self) -> Kind:
        """The kind of its result."""
        return Kind.BOOL if self.bool_result else self.kind

    def render(
        self,
        operands: Sequence[str],
        functions: Mapping[str, str] | None = None,
        literal: Callable[[int | float], str] = repr,
    ) -> str:
        """The expression as source code, for a code generator.

        Compound sub-expressions are parenthesized, so the text means the same in C and Python
        whatever their precedence rules.

        Args:
            operands: the code of each operand (atoms: names, ``a[i]``, ``x.x``).
            functions: the generator's spelling of expression functions (``{"exp": "expf"}``), and of
                binary operators it calls as functions (``{"<<": "shift_left"}``); the others keep
                their names and operators.
            literal: the spelling of a number literal (``lambda v: f"{float(v)}f"`` for f32 C).

        Returns:
            The code of the op's value.

        Example:
            >>> ELEMENTWISE_OPS["float_sub"].render(["a[i]", "b[i]"])
            'a[i] - b[i]'
            >>> ELEMENTWISE_OPS["gelu"].render(["x"], {"erfc": "erfcf"}, lambda v: f"{float(v)}f")
            '(x * erfcf((-x) * 0.7071067811865476f)) * 0.5f'
        """
        if len(operands) != self.operands:
            raise ValueError(f"{self.name}: {len(operands)} operands given, {self.operands} expected")
        tree = _parse(self.expression, self.operands)
        return _render(tree, list(operands), functions or {}, literal, top=True)

    def evaluate(self, *operands: Any) -> Any:
        """The expression computed by NumPy on ``operands`` (arrays and numbers), warnings silenced.

        Example:
            >>> ELEMENTWISE_OPS["relu"].evaluate(np.array([-1.0, 2.0])).tolist()
            [0.0, 2.0]
        """
        if len(operands) != self.operands:
            raise ValueError(f"{self.name}: {len(operands)} operands given, {self.operands} expected")
        code = _compiled(self.expression, self.operands)
        names = {f"_{i}": value for i, value in enumerate(operands)}
        with np.errstate(all="ignore"):
            return eval(code, {"__builtins__": {}, **EXPRESSION_FUNCTIONS}, names)


@functools.cache
def _parse(expression: str, operands: int) -> ast.expr:
    """The syntax tree of ``expression`` with operand ``{i}`` as the name ``_i``, checked against the
    expression language."""
    try:
        source = expression.format(*(f"_{i}" for i in range(operands)))
        tree = ast.parse(source, mode="eval").body
    except (IndexError, SyntaxError) as error:
        raise ValueError(f"expression {expression!r}: {error}") from None
    used: set[str] = set()
    called: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            used.add(node.id)
        elif isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in EXPRESSION_FUNCTIONS:
                raise ValueError(f"expression {expression!r}: calls only EXPRESSION_FUNCTIONS")
            if node.keywords:
                raise ValueError(f"expression {expression!r}: no keyword arguments")
            called.add(node.func.id)
        elif isinstance(node, ast.Constant):
            if type(node.value) not in (int, float):
                raise ValueError(f"expression {expression!r}: literals are numbers")
        elif isinstance(node, ast.Compare):
            if len(node.ops) != 1 or type(node.ops[0]) not in _COMPARISONS:
                raise ValueError(f"expression {expression!r}: one comparison at a time")
        elif isinstance(node, ast.BinOp):
            if type(node.op) not in _BINARY_OPERATORS:
                raise ValueError(f"expression {expression!r}: no {type(node.op).__name__} operator")
        elif isinstance(node, ast.UnaryOp):
            if type(node.op) not in _UNARY_OPERATORS:
                raise ValueError(f"expression {expression!r}: no {type(node.op).__name__} operator")
        elif not isinstance(node, (ast.Load, ast.operator, ast.unaryop, ast.cmpop)):
            raise ValueError(f"expression {expression!r}: {type(node).__name__} is not in the language")
    used -= called
    if used != {f"_{i}" for i in range(operands)}:
        raise ValueError(f"expression {expression!r}: uses operands {sorted(used)}, takes {operands}")
    return tree


@functools.cache
def _compiled(expression: str, operands: int) -> Any:
    return compile(ast.Expression(_parse(expression, operands)), f"<{expression}>", "eval")


def _render(
    node: ast.expr,
    operands: list[str],
    functions: Mapping[str, str],
    literal: Callable[[int | float], str],
    top: bool = False,
) -> str:
    def sub(child: ast.expr) -> str:
        return _render(child, operands, functions, literal)

    if isinstance(node, ast.Name):
        return operands[int(node.id[1:])]
    if isinstance(node, ast.Constant):
        assert isinstance(node.value, (int, float))  # as _parse checked
        return literal(node.value)
    if isinstance(node, ast.Call):
        name = node.func.id  # type: ignore[attr-defined]
        arguments = ", ".join(_render(arg, operands, functions, literal, top=True) for arg in node.args)
        return f"{functions.get(name, name)}({arguments})"
    if isinstance(node, ast.UnaryOp):
        text = f"{_UNARY_OPERATORS[type(node.op)]}{sub(node.operand)}"
    elif isinstance(node, ast.BinOp):
        symbol = _BINARY_OPERATORS[type(node.op)]
        function = functions.get(symbol)
        if function is not None:  # the generator spells this operator as a call
            left, right = (
                _render(arg, operands, functions, literal, top=True) for arg in (node.left, node.right)
            )
            return f"{function}({left}, {right})"
        text = f"{sub(node.left)} {symbol} {sub(node.right)}"
    else:
        assert isinstance(node, ast.Compare)
        text = f"{sub(node.left)} {_COMPARISONS[type(node.ops[0])]} {sub(node.comparators[0])}"
    return text if top else f"({text})"


# -- the table --------------------------------------------------------------------------------------
_table: dict[str, ElementwiseOp] = {}


def _kind(name: str) -> Kind:
    if name.startswith(("int_", "bitwise_")):
        return Kind.INT
    if name.startswith("bool_"):
        return Kind.BOOL
    return Kind.FLOAT  # float_* and the activations


def _op(
    name: str,
    expression: str,
    reference: Callable[..., Any],
    *,
    scalar: bool = False,
    scalars: int = 0,
    bool_result: bool = False,
    broadcasts: bool = True,
    domain: Range | tuple[Range, ...] | None = None,
    tol: float = 1.0,
    scalar_expression: str | None = None,
) -> None:
    """Declare ``name`` (its ``scalars`` last operands numbers); with ``scalar``, also its scalar form
    (the last operand a number), named with ``_elem`` for comparisons and ``_scalar`` otherwise, whose
    expression is ``scalar_expression`` where given."""
    kind = _kind(name)
    operands = len({f"{{{i}}}" for i in range(8) if f"{{{i}}}" in expression})
    if domain is None:
        domain = (-10, 10) if kind is Kind.INT else (-2.0, 2.0)
    pairs: Any = domain if isinstance(domain[0], tuple) else (domain,) * operands
    common: dict[str, Any] = {
        "kind": kind,
        "expression": expression,
        "reference": reference,
        "bool_result": bool_result,
        "broadcasts": broadcasts,
        "domain": tuple((float(low), float(high)) for low, high in pairs),
        "tolerance_scale": tol,
    }
    arity = operands - scalars
    scalar_form = f"{name}_elem" if scalar and bool_result else f"{name}_scalar" if scalar else None
    _table[name] = ElementwiseOp(name, arity=arity, scalars=scalars, scalar_form=scalar_form, **common)
    if scalar_form is not None:
        if scalar_expression is not None:
            common["expression"] = scalar_expression
        _table[scalar_form] = ElementwiseOp(
            scalar_form, arity=arity - 1, scalars=scalars + 1, tensor_form=name, **common
        )


def _compare(name: str, expression: str, reference: Callable[..., Any]) -> None:
    _op(name, expression, reference, scalar=True, bool_result=True)


# references of the activations, in float64 from their definitions (stable forms)
def _gelu(x: Any) -> Any:
    return x * _erfc(-x / math.sqrt(2.0)) / 2


def _gelu_backward(x: Any, grad: Any) -> Any:
    return grad * (_erfc(-x / math.sqrt(2.0)) / 2 + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi))


def _log_sigmoid(x: Any) -> Any:
    return -np.logaddexp(0.0, -x)


def _sigmoid(x: Any) -> Any:
    return np.exp(_log_sigmoid(x))


def _log_sigmoid_backward(x: Any, grad: Any) -> Any:
    return grad * _sigmoid(-x)


def _relu_backward(output: Any, grad: Any) -> Any:
    return np.where(output > 0, grad, 0.0)


def _sigmoid_backward(output: Any, grad: Any) -> Any:
    return grad * output * (1 - output)


def _hard_sigmoid(x: Any, alpha: float, beta: float) -> Any:
    return np.clip(x * alpha + beta, 0.0, 1.0)


_GELU = "{0} * erfc(-{0} * 0.7071067811865476) * 0.5"
_GELU_BACKWARD = (
    "{1} * (erfc(-{0} * 0.7071067811865476) * 0.5 + {0} * exp({0} * {0} * -0.5) * 0.3989422804014327)"
)
# domains: (low, high) for every operand, or one per operand
_DIVISOR = ((-2.0, 2.0), (0.25, 2.0))
_POWER = ((0.5, 2.0), (-2.0, 2.0))
_INT_DIVISOR = ((-10, 10), (1, 5))
_HARD_SIGMOID = ((-4.0, 4.0), (0.1, 0.5), (0.25, 0.75))

# float arithmetic
_op("float_add", "{0} + {1}", np.add, scalar=True)
_op("float_sub", "{0} - {1}", np.subtract, scalar=True)
_op("float_mul", "{0} * {1}", np.multiply, scalar=True)
_op("float_div", "{0} / {1}", np.divide, scalar=True, domain=_DIVISOR)
_op("float_remainder", "mod({0}, {1})", np.mod, scalar=True, domain=((-6, 6), (0.5, 2)))
# a number exponent of 0.5 takes a square root, as NumPy's and PyTorch's pow do (NaN for -inf, -0 for -0,
# where C's pow gives +inf and +0); an exponent tensor takes pow everywhere, as theirs do
_op(
    "float_powf", "pow({0}, {1})", np.power, scalar=True, domain=_POWER, tol=2,
    scalar_expression="where({1} == 0.5, sqrt({0}), pow({0}, {1}))",
)  # fmt: skip
_op("float_powi_scalar", "pow({0}, {1})", np.power, scalars=1, domain=((0.5, 2), (-2, 3)), tol=2)
_op("float_atan2", "atan2({0}, {1})", np.arctan2, domain=_DIVISOR, tol=2)
_op("float_hypot", "hypot({0}, {1})", np.hypot, tol=2)
_op("float_neg", "-{0}", np.negative)
_op("float_recip", "1 / {0}", np.reciprocal, domain=(0.5, 3))
_op("float_sign", "sign({0})", np.sign)
_op("float_abs", "abs({0})", np.abs)
_op("float_clamp", "min(max({0}, {1}), {2})", np.clip, scalars=2, domain=((-2, 2), (-1, -0.25), (0.25, 1)))
_op("float_clamp_min", "max({0}, {1})", np.maximum, scalars=1)
_op("float_clamp_max", "min({0}, {1})", np.minimum, scalars=1)
# float math
_op("float_exp", "exp({0})", np.exp, domain=(-3, 3))
_op("float_log", "log({0})", np.log, domain=(0.1, 4))
_op("float_log1p", "log1p({0})", np.log1p, domain=(-0.5, 3))
_op("float_sqrt", "sqrt({0})", np.sqrt, domain=(0, 4))
_op("float_cos", "cos({0})", np.cos, domain=(-3, 3), tol=2)
_op("float_sin", "sin({0})", np.sin, domain=(-3, 3), tol=2)
_op("float_tan", "tan({0})", np.tan, domain=(-1.2, 1.2), tol=4)
_op("float_cosh", "cosh({0})", np.cosh, domain=(-3, 3))
_op("float_sinh", "sinh({0})", np.sinh, domain=(-3, 3))
_op("float_tanh", "tanh({0})", np.tanh, domain=(-3, 3))
_op("float_acos", "acos({0})", np.arccos, domain=(-0.95, 0.95), tol=2)
_op("float_acosh", "acosh({0})", np.arccosh, domain=(1.05, 4), tol=2)
_op("float_asin", "asin({0})", np.arcsin, domain=(-0.95, 0.95))
_op("float_asinh", "asinh({0})", np.arcsinh, domain=(-3, 3))
_op("float_atan", "atan({0})", np.arctan, domain=(-3, 3))
_op("float_atanh", "atanh({0})", np.arctanh, domain=(-0.9, 0.9), tol=2)
_op("float_erf", "erf({0})", _erf, domain=(-3, 3))
_op("float_erfinv", "erfinv({0})", _erfinv, domain=(-0.95, 0.95), tol=2)
_op("float_round", "rint({0})", np.round, domain=(-4, 4))
_op("float_floor", "floor({0})", np.floor, domain=(-4, 4))
_op("float_ceil", "ceil({0})", np.ceil, domain=(-4, 4))
_op("float_trunc", "trunc({0})", np.trunc, domain=(-4, 4))
_op("float_is_nan", "isnan({0})", np.isnan, bool_result=True)
_op("float_is_inf", "isinf({0})", np.isinf, bool_result=True)
# float comparisons
_compare("float_equal", "{0} == {1}", np.equal)
_compare("float_not_equal", "{0} != {1}", np.not_equal)
_compare("float_greater", "{0} > {1}", np.greater)
_compare("float_greater_equal", "{0} >= {1}", np.greater_equal)
_compare("float_lower", "{0} < {1}", np.less)
_compare("float_lower_equal", "{0} <= {1}", np.less_equal)
# activations
_op("relu", "max({0}, 0)", lambda x: np.maximum(x, 0.0))
_op("relu_backward", "where({0} > 0, {1}, 0)", _relu_backward, broadcasts=False)
_op("leaky_relu", "where({0} >= 0, {0}, {0} * {1})", lambda x, s: np.where(x >= 0, x, x * s), scalars=1)
_op("gelu", _GELU, _gelu, domain=(-4, 4))
_op("gelu_backward", _GELU_BACKWARD, _gelu_backward, broadcasts=False, domain=(-4, 4), tol=2)
_op("sigmoid", "1 / (1 + exp(-{0}))", _sigmoid, domain=(-8, 8))
_op("sigmoid_backward", "{1} * {0} * (1 - {0})", _sigmoid_backward, broadcasts=False, domain=(0.01, 0.99))
_op("hard_sigmoid", "min(max({0} * {1} + {2}, 0), 1)", _hard_sigmoid, scalars=2, domain=_HARD_SIGMOID)
_op("log_sigmoid", "min({0}, 0) - log1p(exp(-abs({0})))", _log_sigmoid, domain=(-8, 8))
_op("log_sigmoid_backward", "{1} / (1 + exp({0}))", _log_sigmoid_backward, broadcasts=False, domain=(-8, 8))
# int arithmetic (domains keep results in every int dtype's range)
_op("int_add", "{0} + {1}", np.add, scalar=True)
_op("int_sub", "{0} - {1}", np.subtract, scalar=True, domain=((10, 20), (0, 10)))
_op("int_mul", "{0} * {1}", np.multiply, scalar=True)
_op("int_div", "floordiv({0}, {1})", np.floor_divide, scalar=True, domain=_INT_DIVISOR)
_op("int_remainder", "mod({0}, {1})", np.mod, scalar=True, domain=_INT_DIVISOR)
_op("int_powi", "pow({0}, {1})", np.power, scalar=True, domain=((-3, 3), (0, 3)))
_op("int_neg", "-{0}", np.negative)
_op("int_abs", "abs({0})", np.abs)
_op("int_sign", "sign({0})", np.sign)
_op("int_square", "{0} * {0}", np.square)
_op("int_clamp", "min(max({0}, {1}), {2})", np.clip, scalars=2, domain=((-10, 10), (0, 3), (5, 8)))
_op("int_clamp_min", "max({0}, {1})", np.maximum, scalars=1)
_op("int_clamp_max", "min({0}, {1})", np.minimum, scalars=1)
# int bitwise
_op("bitwise_and", "{0} & {1}", np.bitwise_and, scalar=True)
_op("bitwise_or", "{0} | {1}", np.bitwise_or, scalar=True)
_op("bitwise_xor", "{0} ^ {1}", np.bitwise_xor, scalar=True)
_op("bitwise_not", "~{0}", np.invert)
_op("bitwise_left_shift", "{0} << {1}", np.left_shift, scalar=True, domain=((0, 10), (0, 3)))
_op("bitwise_right_shift", "{0} >> {1}", np.right_shift, scalar=True, domain=((-10, 10), (0, 3)))
# int comparisons
_compare("int_equal", "{0} == {1}", np.equal)
_compare("int_not_equal", "{0} != {1}", np.not_equal)
_compare("int_greater", "{0} > {1}", np.greater)
_compare("int_greater_equal", "{0} >= {1}", np.greater_equal)
_compare("int_lower", "{0} < {1}", np.less)
_compare("int_lower_equal", "{0} <= {1}", np.less_equal)
# bool logic
_op("bool_not", "logical_not({0})", np.logical_not)
_op("bool_and", "{0} & {1}", np.logical_and)
_op("bool_or", "{0} | {1}", np.logical_or)
_op("bool_xor", "{0} ^ {1}", np.logical_xor)
_compare("bool_equal", "{0} == {1}", np.equal)
_compare("bool_not_equal", "{0} != {1}", np.not_equal)

ELEMENTWISE_OPS: Mapping[str, ElementwiseOp] = MappingProxyType(_table)
"""Every element-wise op of the backend interface, by method name (tensor and scalar forms alike)."""
