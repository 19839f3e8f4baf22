"""``generate``/``ModelGen`` on hostile and multi-output models: file-given strings reach the source only as
escaped literals (importing the generated module runs nothing from the file), initializers whose names
sanitize alike keep their own weights, and nodes declaring fewer outputs than their operator returns
generate; the generated modules are compared with onnxruntime."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from burn_backend import Tensor, default_device

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
burn_onnx = pytest.importorskip("burn_import.onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402


def _import(source: Path, module_name: str) -> Any:
    spec = importlib.util.spec_from_file_location(module_name, source)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(module_name, None)
    return module


def _reference(model: Any, feeds: dict[str, np.ndarray[Any, Any]]) -> list[Any]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))


def _generated_outputs(
    model: Any, tmp_path: Path, name: str, inputs: list[np.ndarray[Any, Any]]
) -> list[Any]:
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, str(path))
    source, weights = burn_onnx.generate(path, tmp_path / "out", name=name)
    module = _import(source, f"_generated_{name}")
    device = default_device()
    result = module.Model.load(weights, device)(*[Tensor.from_numpy(x, device) for x in inputs])
    return [t.to_numpy() for t in (result if isinstance(result, tuple) else (result,))]


def _payload(marker: Path, quote: str) -> str:
    """A name that, pasted into a docstring or string literal delimited by ``quote``, closes it and
    writes ``marker`` when the module is imported."""
    return f'x{quote}\nopen({str(marker)!r}, "w").write("ran")\n{quote}\\ é "\' \\n'


def test_hostile_names_do_not_run_and_outputs_match_onnxruntime(tmp_path: Path) -> None:
    marker = tmp_path / "payload_ran"
    names = {q: _payload(marker, q) for q in ('"""', "'''", '"', "'")}
    x_name, y_name, z_name = names['"""'], names["'''"], names['"'] + "out"
    rng = np.random.default_rng(0)
    w_dot = rng.standard_normal((3, 3)).astype(np.float32)
    w_us = rng.standard_normal((3, 3)).astype(np.float32)
    big = rng.standard_normal((80,)).astype(np.float32)  # a constant large enough to be a buffer
    nodes = [
        helper.make_node("MatMul", [x_name, "w.1"], ["h.1"], name=names["'"], doc_string=names['"""']),
        helper.make_node("MatMul", ["h.1", "w_1"], ["h_1"], name='n"""'),
        helper.make_node("Constant", [], [names["'"]], value=numpy_helper.from_array(np.float32(2.0))),
        helper.make_node("Mul", ["h_1", names["'"]], [y_name]),
        helper.make_node("ReduceSum", [names['"'] + "big"], [names['"'] + "s"], keepdims=0),
        helper.make_node("Add", [y_name, names['"'] + "s"], [z_name]),
    ]
    graph = helper.make_graph(
        nodes,
        names['"""'] + "graph",
        [helper.make_tensor_value_info(x_name, TensorProto.FLOAT, [2, 3])],
        [
            helper.make_tensor_value_info(y_name, TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info(z_name, TensorProto.FLOAT, [2, 3]),
        ],
        initializer=[
            numpy_helper.from_array(w_dot, "w.1"),
            numpy_helper.from_array(w_us, "w_1"),
            numpy_helper.from_array(big, names['"'] + "big"),
        ],
        doc_string=names["'''"],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], doc_string=names['"'])
    x = rng.standard_normal((2, 3)).astype(np.float32)
    expected = _reference(model, {x_name: x})
    got = _generated_outputs(model, tmp_path, "hostile", [x])
    assert not marker.exists(), "importing the generated module ran code from the file"
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-5)
    # the two weights stayed two (``w.1`` and ``w_1`` sanitize alike)
    np.testing.assert_allclose(expected[0], x @ w_dot @ w_us * 2, rtol=1e-5)
    source = (tmp_path / "out" / "hostile.py").read_text()
    assert source.isascii()
    module = _import(tmp_path / "out" / "hostile.py", "_generated_hostile_names")
    assert names['"""'] + "graph" == module.GRAPH_NAME
    assert [x_name] == module.INPUT_NAMES
    assert [y_name, z_name] == module.OUTPUT_NAMES
    assert not marker.exists()


def test_names_clashing_with_the_generated_module(tmp_path: Path) -> None:
    """Values named as the module's own names, builtins or keywords get other identifiers."""
    names = ["op", "self", "np", "float", "class", "Tensor", "WEIGHTS", "_zeros", "1x", "ﬁ", "fi"]
    nodes = [helper.make_node("Neg", ["x"], [names[0]])]
    for previous, name in itertools.pairwise(names):
        nodes.append(helper.make_node("Neg", [previous], [name]))
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info(names[-2], TensorProto.FLOAT, [4]),
         helper.make_tensor_value_info(names[-1], TensorProto.FLOAT, [4])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = np.arange(4, dtype=np.float32) - 1.5
    got = _generated_outputs(model, tmp_path, "clash", [x])
    np.testing.assert_array_equal(got[0], x)  # ten negations
    np.testing.assert_array_equal(got[1], -x)


def test_class_name_must_be_an_identifier(tmp_path: Path) -> None:
    graph = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["y"])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(burn_onnx.OnnxImportError, match="class_name"):
        burn_onnx.generate(model, tmp_path, class_name="M(Module):\n    pass\nimport os\nclass X")


def _lstm_model(op: str) -> tuple[Any, list[np.ndarray[Any, Any]]]:
    rng = np.random.default_rng(1)
    gates = 4 if op == "LSTM" else 3
    hidden, size = 5, 3
    w = rng.standard_normal((1, gates * hidden, size)).astype(np.float32) * 0.5
    r = rng.standard_normal((1, gates * hidden, hidden)).astype(np.float32) * 0.5
    b = rng.standard_normal((1, 2 * gates * hidden)).astype(np.float32) * 0.5
    node = helper.make_node(op, ["x", "W", "R", "B"], ["Y"], hidden_size=hidden)
    graph = helper.make_graph(
        [node, helper.make_node("Transpose", ["Y"], ["out"], perm=[1, 0, 2, 3])],
        "rnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2, size])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        initializer=[numpy_helper.from_array(a, n) for a, n in ((w, "W"), (r, "R"), (b, "B"))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, [rng.standard_normal((4, 2, size)).astype(np.float32)]


@pytest.mark.parametrize("op", ["LSTM", "GRU"])
def test_recurrent_node_declaring_only_y_generates(tmp_path: Path, op: str) -> None:
    model, inputs = _lstm_model(op)
    (expected,) = _reference(model, {"x": inputs[0]})
    (got,) = _generated_outputs(model, tmp_path, op.lower(), inputs)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_native_attention_declaring_only_y_generates(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((1, 2, 4, 8)).astype(np.float32) for _ in range(3))
    graph = helper.make_graph(
        [helper.make_node("Attention", ["q", "k", "v"], ["y"]),
         helper.make_node("Transpose", ["y"], ["out"], perm=[0, 2, 1, 3])],
        "attention",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 2, 4, 8]) for n in "qkv"],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 4, 2, 8])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    model.ir_version = 10
    (expected,) = _reference(model, {"q": q, "k": k, "v": v})
    (got,) = _generated_outputs(model, tmp_path, "attention", [q, k, v])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_hostile_ir_strings_stay_literals(tmp_path: Path) -> None:
    """Op type, domain, attribute names and values of an IR graph (``generate`` takes one too) are
    written as escaped literals: importing the module runs nothing, and ``forward`` passes them on."""
    marker = tmp_path / "payload_ran"
    payload = _payload(marker, '"""')
    node = burn_onnx.Node(
        name=payload,
        op_type="Relu" + payload,
        domain=_payload(marker, "'"),
        opset=17,
        inputs=["x"],
        outputs=["y"],
        attrs={payload: _payload(marker, '"'), "mode": [payload, "b"], "alpha": float("nan")},
    )
    graph = burn_onnx.Graph(name=payload, inputs=["x"], outputs=["y"], nodes=[node])
    source, weights = burn_onnx.generate(graph, tmp_path / "out", name="ir")
    module = _import(source, "_generated_ir")
    assert not marker.exists()
    model = module.Model.load(weights)
    with pytest.raises(burn_onnx.OnnxImportError, match="unsupported operator") as info:
        model(Tensor.from_numpy(np.zeros(2, np.float32), default_device()))
    assert "Relu" + payload in str(info.value)  # the op type arrived unchanged
    assert not marker.exists()


def test_a_model_that_cannot_be_generated_writes_nothing(tmp_path: Path) -> None:
    node = burn_onnx.Node("n", "Relu", "", 17, ["x"], ["y"], {"type": burn_onnx.ValueType("tensor", 1)})
    graph = burn_onnx.Graph(name="g", inputs=["x"], outputs=["y"], nodes=[node])
    with pytest.raises(burn_onnx.OnnxImportError, match="ValueType cannot be written as source"):
        burn_onnx.generate(graph, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_string_literals_round_trip_in_ascii() -> None:
    from burn_import.onnx._codegen import _string

    rng = np.random.default_rng(5)
    texts = ['"""', "'''", "\\", '\\"', "\n\r\t\0", "é€😀\u2028\x7f", "\ud800"]
    for _ in range(500):
        codes = rng.integers(0, 0x110000, 12) if rng.random() < 0.5 else rng.integers(0, 128, 12)
        texts.append("".join(chr(int(c)) for c in codes))
    for text in texts:
        literal = _string(text)
        assert literal.isascii()
        assert literal.startswith('"')
        assert eval(literal) == text  # the literal is what the generated module holds


def test_model_gen_passes_its_limits(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(_lstm_model("GRU")[0], str(path))
    gen = burn_onnx.ModelGen().input(path).out_dir(tmp_path / "out")
    with pytest.raises(burn_onnx.OnnxImportError, match=r"m.onnx': tensor 'W'.*OnnxLimits.max_tensor_bytes"):
        gen.limits(burn_onnx.OnnxLimits(max_tensor_bytes=64)).run_from_script()
    assert not (tmp_path / "out").exists()
