"""The element-wise op table: its expression language (checked, rendered for code generators, evaluated
by NumPy) and the shape of its entries. The conformance suite checks every entry against the backends
(``burn_backend.testing.core.test_elementwise_table``)."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Kind
from burn_backend.kit import ELEMENTWISE_OPS, EXPRESSION_FUNCTIONS, ElementwiseOp


def declared(expression: str, arity: int = 1, scalars: int = 0) -> ElementwiseOp:
    return ElementwiseOp(
        "float_test",
        Kind.FLOAT,
        arity,
        scalars,
        expression,
        np.negative,
        domain=((-1.0, 1.0),) * (arity + scalars),
    )


def test_scalar_forms_are_declared_with_their_tensor_forms() -> None:
    add, add_scalar = ELEMENTWISE_OPS["float_add"], ELEMENTWISE_OPS["float_add_scalar"]
    assert (add.arity, add.scalars, add.scalar_form, add.tensor_form) == (2, 0, "float_add_scalar", None)
    assert (add_scalar.arity, add_scalar.scalars, add_scalar.tensor_form) == (1, 1, "float_add")
    assert add_scalar.expression == add.expression
    greater = ELEMENTWISE_OPS["int_greater"]
    assert greater.scalar_form == "int_greater_elem"
    assert greater.bool_result
    assert greater.result_kind is Kind.BOOL
    assert ELEMENTWISE_OPS["bitwise_xor_scalar"].kind is Kind.INT
    assert ELEMENTWISE_OPS["bool_not"].result_kind is Kind.BOOL
    assert ELEMENTWISE_OPS["relu"].kind is Kind.FLOAT


def test_the_table_covers_the_element_wise_ops_of_the_interface() -> None:
    kinds = {op.kind for op in ELEMENTWISE_OPS.values()}
    assert kinds == {Kind.FLOAT, Kind.INT, Kind.BOOL}
    present = ["float_exp", "float_powf_scalar", "float_clamp", "float_lower_equal_elem", "relu", "gelu"]
    present += ["sigmoid", "log_sigmoid_backward", "int_remainder_scalar", "bitwise_not", "bool_xor"]
    for name in present:
        assert name in ELEMENTWISE_OPS
    for name in ("float_matmul", "float_sum", "float_cast", "softmax"):
        assert name not in ELEMENTWISE_OPS


def test_render_parenthesizes_compound_operands_only() -> None:
    assert ELEMENTWISE_OPS["float_add"].render(["a", "b"]) == "a + b"
    assert ELEMENTWISE_OPS["float_clamp"].render(["x", "lo", "hi"]) == "min(max(x, lo), hi)"
    assert ELEMENTWISE_OPS["sigmoid_backward"].render(["y", "g"]) == "(g * y) * (1 - y)"
    assert ELEMENTWISE_OPS["leaky_relu"].render(["x", "s"]) == "where(x >= 0, x, x * s)"
    # C binds == tighter than &, Python the other way round: explicit parentheses mean one thing in both
    assert declared("({0} & {1}) == {0}", 2).render(["a", "b"]) == "(a & b) == a"
    assert declared("{0} & ({1} == {0})", 2).render(["a", "b"]) == "a & (b == a)"


def test_render_spells_functions_and_literals_for_the_target() -> None:
    op = ELEMENTWISE_OPS["log_sigmoid"]
    c = op.render(
        ["x[i]"], {"min": "fminf", "log1p": "log1pf", "exp": "expf", "abs": "fabsf"}, lambda v: f"{v}.0f"
    )
    assert c == "fminf(x[i], 0.0f) - log1pf(expf(-fabsf(x[i])))"


def test_render_needs_every_operand() -> None:
    with pytest.raises(ValueError, match="1 operands given, 2 expected"):
        ELEMENTWISE_OPS["float_add"].render(["a"])


@pytest.mark.parametrize(
    ("expression", "arity", "message"),
    [
        ("cbrt({0})", 1, "calls only EXPRESSION_FUNCTIONS"),
        ("np.exp({0})", 1, "calls only EXPRESSION_FUNCTIONS"),
        ("{0} < {1} < 2", 2, "one comparison at a time"),
        ("{0} if {1} else 0", 2, "IfExp is not in the language"),
        ("{0} ** 2", 1, "no Pow operator"),
        ("{0} // {1}", 2, "no FloorDiv operator"),
        ("not {0}", 1, "no Not operator"),
        ("{0} and {1}", 2, "BoolOp is not in the language"),
        ("{0} + 'a'", 1, "literals are numbers"),
        ("{0} + True", 1, "literals are numbers"),
        ("{0}.real", 1, "Attribute is not in the language"),
        ("max({0}, initial=0)", 1, "no keyword arguments"),
        ("{0} + {1}", 1, "Replacement index 1 out of range"),
        ("{0} + y", 1, r"uses operands \['_0', 'y'\]"),
        ("exp({0})", 2, r"uses operands \['_0'\], takes 2"),
        ("{0} +", 1, "invalid syntax"),
    ],
)
def test_expressions_outside_the_language_are_rejected(expression: str, arity: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        declared(expression, arity)


def test_a_domain_range_per_operand() -> None:
    with pytest.raises(ValueError, match="1 domain ranges for 2 operands"):
        ElementwiseOp("float_x", Kind.FLOAT, 2, 0, "{0} + {1}", np.add, domain=((0.0, 1.0),))
    assert ELEMENTWISE_OPS["float_clamp"].domain == ((-2.0, 2.0), (-1.0, -0.25), (0.25, 1.0))
    assert ELEMENTWISE_OPS["float_mul"].domain == ((-2.0, 2.0), (-2.0, 2.0))


def test_evaluate_computes_the_expression_with_numpy() -> None:
    x = np.array([-1.0, 0.0, np.nan, 3.0])
    np.testing.assert_array_equal(ELEMENTWISE_OPS["relu"].evaluate(x), [0.0, 0.0, np.nan, 3.0])
    np.testing.assert_array_equal(
        ELEMENTWISE_OPS["float_clamp"].evaluate(x, -0.5, 0.5), [-0.5, 0.0, np.nan, 0.5]
    )
    np.testing.assert_array_equal(
        ELEMENTWISE_OPS["float_round"].evaluate(np.array([0.5, 1.5, -2.5])), [0, 2, -2]
    )
    np.testing.assert_array_equal(
        ELEMENTWISE_OPS["int_remainder_scalar"].evaluate(np.array([-7, 7]), 3), [2, 1]
    )
    np.testing.assert_array_equal(
        ELEMENTWISE_OPS["int_div"].evaluate(np.array([-7, 7]), np.array([2, -2])), [-4, -4]
    )
    a, b = np.array([True, False]), np.array([[True], [False]])
    np.testing.assert_array_equal(ELEMENTWISE_OPS["bool_xor"].evaluate(a, b), [[False, True], [True, False]])
    with np.errstate(all="raise"):  # evaluation silences floating-point warnings itself
        assert ELEMENTWISE_OPS["sigmoid"].evaluate(np.array([-1000.0]))[0] == 0.0
    with pytest.raises(ValueError, match="2 operands given, 1 expected"):
        ELEMENTWISE_OPS["float_exp"].evaluate(x, x)


def test_expression_functions_are_numpy_functions() -> None:
    assert EXPRESSION_FUNCTIONS["max"] is np.maximum  # NaN-propagating, unlike C's fmax
    assert EXPRESSION_FUNCTIONS["rint"] is np.rint
    assert EXPRESSION_FUNCTIONS["mod"](-7, 3) == 2
    with pytest.raises(TypeError):
        EXPRESSION_FUNCTIONS["cbrt"] = np.cbrt  # type: ignore[index]
    with pytest.raises(TypeError):
        ELEMENTWISE_OPS["float_cbrt"] = declared("{0}")  # type: ignore[index]
