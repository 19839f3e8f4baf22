"""ONNX's quantized operators (``QuantizeLinear``, ``DequantizeLinear``, ``DynamicQuantizeLinear``,
``MatMulInteger``, ``QLinearMatMul``, ``ConvInteger``, ``QLinearConv``): exact integer results against
NumPy int64 references and onnxruntime on random inputs, models quantized by onnxruntime's
``quantize_dynamic`` and ``quantize_static`` (an MLP and a small CNN, through ``load`` and through the
generated code) against onnxruntime, and bad parameters as errors naming the node."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from burn_backend import Tensor, default_device

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
burn_onnx = pytest.importorskip("burn_import.onnx")
quantization = pytest.importorskip("onnxruntime.quantization")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

Array = np.ndarray[Any, Any]


def _model(
    nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: Sequence[Any] = (), opset: int = 21
) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=10)


def _ort(model: Any, feeds: dict[str, Array], optimize: bool = True) -> list[Array]:
    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))


def _burn(model: Any, feeds: dict[str, Array]) -> list[Array]:
    loaded = burn_onnx.load(model, default_device())
    return [o.to_numpy() if hasattr(o, "to_numpy") else np.asarray(o) for o in loaded.run(*feeds.values())]


def _info(name: str, elem: int, shape: list[Any] | None) -> Any:
    return helper.make_tensor_value_info(name, elem, shape)


def _init(name: str, value: Any) -> Any:
    return numpy_helper.from_array(np.asarray(value), name)


# -- single operators: exact integers ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("a_type", "b_type"), [(np.uint8, np.uint8), (np.int8, np.uint8), (np.uint8, np.int8)]
)
def test_matmul_integer_is_exact_with_per_row_and_per_column_zero_points(a_type: Any, b_type: Any) -> None:
    rng = np.random.default_rng(0)
    ia, ib = np.iinfo(a_type), np.iinfo(b_type)
    a = rng.integers(ia.min, ia.max + 1, (2, 5, 33), dtype=a_type)
    b = rng.integers(ib.min, ib.max + 1, (33, 7), dtype=b_type)
    za = rng.integers(ia.min, ia.max + 1, (5,), dtype=a_type)
    zb = rng.integers(ib.min, ib.max + 1, (7,), dtype=b_type)
    elem = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}
    model = _model(
        [helper.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"])],
        [_info("a", elem[a_type], [2, 5, 33]), _info("b", elem[b_type], [33, 7])],
        [_info("y", TensorProto.INT32, None)],
        [_init("za", za), _init("zb", zb)],
    )
    got = _burn(model, {"a": a, "b": b})[0]
    want = (a.astype(np.int64) - za[:, None]) @ (b.astype(np.int64) - zb)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)


def test_conv_integer_is_exact_per_output_channel_with_padding_and_groups() -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(0, 256, (2, 4, 9, 8), dtype=np.uint8)
    w = rng.integers(-128, 128, (6, 2, 3, 3), dtype=np.int8)
    xz = np.array(131, np.uint8)
    wz = rng.integers(-128, 128, (6,), dtype=np.int8)
    attrs: dict[str, Any] = {"pads": [1, 2, 0, 1], "strides": [2, 1], "group": 2}
    model = _model(
        [helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], **attrs)],
        [_info("x", TensorProto.UINT8, [2, 4, 9, 8])],
        [_info("y", TensorProto.INT32, None)],
        [_init("w", w), _init("xz", xz), _init("wz", wz)],
    )
    got = _burn(model, {"x": x})[0]
    # the reference in int64: pads with the zero point (zeros once shifted), windows, grouped products
    shifted = np.pad(x.astype(np.int64) - 131, ((0, 0), (0, 0), (1, 0), (2, 1)))
    kernel = w.astype(np.int64) - wz.astype(np.int64)[:, None, None, None]
    windows = np.lib.stride_tricks.sliding_window_view(shifted, (3, 3), axis=(2, 3))[:, :, ::2, :]
    want = np.concatenate(
        [
            np.einsum("nchwij,ocij->nohw", windows[:, 2 * g : 2 * g + 2], kernel[3 * g : 3 * g + 3])
            for g in range(2)
        ],
        axis=1,
    )
    assert got.dtype == np.int32
    assert got.shape == want.shape == (2, 6, 4, 9)
    np.testing.assert_array_equal(got, want)


def _f32_ties(rng: np.random.Generator, count: int) -> tuple[Array, Array]:
    """Values ``x`` and a scale ``s`` whose float32 quotient ``x / s`` is exactly half-way between two
    integers while the exact quotient is not, and rounds to the other integer: float64 arithmetic gets
    them wrong."""
    s = np.float32(0.0123)
    found: list[np.float32] = []
    for k in range(-120, 120):
        if len(found) == count:
            break
        x = np.float32((k + 0.5) * float(s))
        for candidate in (x, np.nextafter(x, np.float32(np.inf)), np.nextafter(x, np.float32(-np.inf))):
            exact = float(candidate) / float(s)
            if candidate / s == np.float32(k + 0.5) and np.rint(exact) != np.rint(candidate / s):
                found.append(candidate)
                break
    assert len(found) == count
    x = np.array(found + list(rng.normal(0.0, 1.0, 64).astype(np.float32)), np.float32)
    return x, np.array(s, np.float32)


def test_quantize_linear_divides_in_the_inputs_float_type_and_rounds_half_to_even() -> None:
    x, s = _f32_ties(np.random.default_rng(2), 8)
    z = np.array(3, np.int8)
    model = _model(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"])],
        [_info("x", TensorProto.FLOAT, [x.size])],
        [_info("y", TensorProto.INT8, None)],
        [_init("s", s), _init("z", z)],
    )
    got = _burn(model, {"x": x})[0]
    want = np.clip(np.rint(x / s).astype(np.int64) + 3, -128, 127)  # float32 division, as ONNX's reference
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, _ort(model, {"x": x})[0])


@pytest.mark.parametrize("block", [0, 4])
def test_quantize_then_dequantize_per_axis_and_blocked_match_onnxruntime(block: int) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(0.0, 3.0, (3, 10, 5)).astype(np.float32)
    n = 10 if not block else -(-10 // block)
    shape = [n] if not block else [3, n, 5]
    s = rng.uniform(0.01, 0.05, shape).astype(np.float32)
    z = rng.integers(0, 256, shape, dtype=np.uint8)
    attrs: dict[str, Any] = {"axis": 1, **({"block_size": block} if block else {})}
    model = _model(
        [
            helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], **attrs),
            helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], **attrs),
        ],
        [_info("x", TensorProto.FLOAT, [3, 10, 5])],
        [_info("q", TensorProto.UINT8, None), _info("y", TensorProto.FLOAT, None)],
        [_init("s", s), _init("z", z)],
    )
    got, want = _burn(model, {"x": x}), _ort(model, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert (got[0] == 0).any()
    assert (got[0] == 255).any()  # saturated both ways


@pytest.mark.parametrize("scale", [1.0, 40.0, 0.0])
def test_dynamic_quantize_linear_matches_onnxruntime(scale: float) -> None:
    x = (np.random.default_rng(4).normal(0.3, 1.0, (7, 13)) * scale).astype(np.float32)
    model = _model(
        [helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "s", "z"])],
        [_info("x", TensorProto.FLOAT, [7, 13])],
        [
            _info("y", TensorProto.UINT8, None),
            _info("s", TensorProto.FLOAT, None),
            _info("z", TensorProto.UINT8, None),
        ],
    )
    got, want = _burn(model, {"x": x}), _ort(model, {"x": x})
    for g, w in zip(got, want):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


def test_qlinear_matmul_requantizes_as_onnxruntime() -> None:
    rng = np.random.default_rng(5)
    a = rng.integers(0, 256, (4, 3, 64), dtype=np.uint8)
    b = rng.integers(-128, 128, (64, 9), dtype=np.int8)
    inits = {
        "sa": np.array(0.0173, np.float32), "za": np.array(117, np.uint8),
        "sb": np.array(0.0091, np.float32), "zb": np.array(0, np.int8),
        "sy": np.array(0.213, np.float32), "zy": np.array(128, np.uint8),
    }  # fmt: skip
    model = _model(
        [helper.make_node("QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"])],
        [_info("a", TensorProto.UINT8, [4, 3, 64])],
        [_info("y", TensorProto.UINT8, None)],
        [_init("b", b), *[_init(k, v) for k, v in inits.items()]],
        opset=13,
    )
    got, want = _burn(model, {"a": a})[0], _ort(model, {"a": a})[0]
    np.testing.assert_array_equal(got, want)
    acc = (a.astype(np.int64) - 117) @ b.astype(np.int64)
    multiplier = np.float32(0.0173) * np.float32(0.0091) / np.float32(0.213)
    ref = np.clip(np.rint(acc.astype(np.float32) * multiplier) + 128, 0, 255)
    np.testing.assert_array_equal(got, ref)
    assert 0 < got.min() < got.max() < 255


# -- models quantized by onnxruntime -----------------------------------------------------------------
def _mlp(rng: np.random.Generator) -> Any:
    w1 = rng.normal(0.0, 0.3, (16, 32)).astype(np.float32)
    b1 = rng.normal(0.0, 0.1, (32,)).astype(np.float32)
    w2 = rng.normal(0.0, 0.3, (32, 8)).astype(np.float32)
    b2 = rng.normal(0.0, 0.1, (8,)).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "w2"], ["h3"]),
        helper.make_node("Add", ["h3", "b2"], ["y"]),
    ]
    inits = [_init("w1", w1), _init("b1", b1), _init("w2", w2), _init("b2", b2)]
    return _model(
        nodes, [_info("x", TensorProto.FLOAT, ["n", 16])], [_info("y", TensorProto.FLOAT, None)], inits, 13
    )


def _cnn(rng: np.random.Generator) -> Any:
    w1 = rng.normal(0.0, 0.3, (8, 3, 3, 3)).astype(np.float32)
    b1 = rng.normal(0.0, 0.1, (8,)).astype(np.float32)
    w2 = rng.normal(0.0, 0.2, (4, 8, 3, 3)).astype(np.float32)
    b2 = rng.normal(0.0, 0.1, (4,)).astype(np.float32)
    wf = rng.normal(0.0, 0.2, (4 * 5 * 5, 6)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Flatten", ["r2"], ["f"]),
        helper.make_node("MatMul", ["f", "wf"], ["y"]),
    ]
    inits = [_init("w1", w1), _init("b1", b1), _init("w2", w2), _init("b2", b2), _init("wf", wf)]
    return _model(
        nodes,
        [_info("x", TensorProto.FLOAT, ["n", 3, 10, 10])],
        [_info("y", TensorProto.FLOAT, None)],
        inits,
        13,
    )


class _Reader:
    """Calibration batches for ``quantize_static``."""

    def __init__(self, batches: list[Array]) -> None:
        self.batches = iter(batches)

    def get_next(self) -> dict[str, Array] | None:
        batch = next(self.batches, None)
        return None if batch is None else {"x": batch}


def _quantized(tmp_path: Path, model: Any, how: str, inputs: list[Array]) -> Any:
    source, target = tmp_path / "float.onnx", tmp_path / f"{how}.onnx"
    onnx.save(model, str(source))
    if how == "dynamic":
        quantization.quantize_dynamic(str(source), str(target), weight_type=quantization.QuantType.QUInt8)
    else:
        quantization.quantize_static(
            str(source),
            str(target),
            _Reader(inputs),
            quant_format=quantization.QuantFormat.QOperator
            if how == "qoperator"
            else quantization.QuantFormat.QDQ,
            per_channel=True,
            op_types_to_quantize=["MatMul", "Conv"],
            activation_type=quantization.QuantType.QUInt8,
            weight_type=quantization.QuantType.QInt8,
        )
    return onnx.load(str(target))


def _ops(model: Any) -> set[str]:
    return {node.op_type for node in model.graph.node}


_EXPECTED_OPS = {
    ("mlp", "dynamic"): {"DynamicQuantizeLinear", "MatMulInteger"},
    ("mlp", "qoperator"): {"QuantizeLinear", "QLinearMatMul", "DequantizeLinear"},
    ("mlp", "qdq"): {"QuantizeLinear", "DequantizeLinear"},
    ("cnn", "dynamic"): {"DynamicQuantizeLinear", "ConvInteger", "MatMulInteger"},
    ("cnn", "qoperator"): {"QuantizeLinear", "QLinearConv", "QLinearMatMul", "DequantizeLinear"},
    ("cnn", "qdq"): {"QuantizeLinear", "DequantizeLinear"},
}


@pytest.mark.parametrize("how", ["dynamic", "qoperator", "qdq"])
@pytest.mark.parametrize("name", ["mlp", "cnn"])
def test_models_quantized_by_onnxruntime_match_it(tmp_path: Path, name: str, how: str) -> None:
    rng = np.random.default_rng(6)
    shape = (5, 16) if name == "mlp" else (2, 3, 10, 10)
    calibration = [rng.normal(0.0, 1.0, shape).astype(np.float32) for _ in range(4)]
    model = _quantized(tmp_path, _mlp(rng) if name == "mlp" else _cnn(rng), how, calibration)
    assert _EXPECTED_OPS[(name, how)] <= _ops(model), _ops(model)
    x = rng.normal(0.0, 1.0, shape).astype(np.float32)
    got = _burn(model, {"x": x})[0]
    if how == "qdq":
        # onnxruntime runs a QDQ graph as it is written when not optimized; float products round
        # differently from ours, so a value may land one output step away
        want = _ort(model, {"x": x}, optimize=False)[0]
        step = _largest_scale(model)
        np.testing.assert_allclose(got, want, rtol=0, atol=step * 1.001)
        assert np.mean(got == want) > 0.9
    else:
        want = _ort(model, {"x": x})[0]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        if how == "qoperator":
            np.testing.assert_array_equal(got, want)  # integers all the way, one float scale at the end


def _largest_scale(model: Any) -> float:
    """The largest per-tensor scale of the model's activations: one step of its coarsest grid."""
    scales = [numpy_helper.to_array(i) for i in model.graph.initializer if i.name.endswith("_scale")]
    return max(float(s) for s in scales if s.size == 1)


def test_generated_code_runs_a_quantized_model_as_load_does(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    calibration = [rng.normal(0.0, 1.0, (2, 3, 10, 10)).astype(np.float32) for _ in range(2)]
    model = _quantized(tmp_path, _cnn(rng), "qoperator", calibration)
    x = rng.normal(0.0, 1.0, (2, 3, 10, 10)).astype(np.float32)
    path = tmp_path / "q.onnx"
    onnx.save(model, str(path))
    source, weights = burn_onnx.generate(path, tmp_path / "out", name="quant_cnn")
    spec = importlib.util.spec_from_file_location("_generated_quant_cnn", source)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["_generated_quant_cnn"] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop("_generated_quant_cnn", None)
    device = default_device()
    out = module.Model.load(weights, device)(Tensor.from_numpy(x, device))
    np.testing.assert_array_equal(out.to_numpy(), _ort(model, {"x": x})[0])


# -- bad parameters ----------------------------------------------------------------------------------
def _run_bad(node: Any, x: Array, inits: dict[str, Array]) -> str:
    elem = helper.np_dtype_to_tensor_dtype(x.dtype)
    model = _model(
        [node],
        [_info("x", elem, list(x.shape))],
        [_info("y", TensorProto.UNDEFINED, None)],
        [_init(k, v) for k, v in inits.items()],
    )
    with pytest.raises(burn_onnx.OnnxImportError) as info:
        burn_onnx.load(model, default_device()).run(x)
    return str(info.value)


def test_a_per_axis_scale_of_the_wrong_length_is_an_error_naming_node_and_shapes() -> None:
    x = np.zeros((2, 5), np.float32)
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q1", axis=1)
    message = _run_bad(node, x, {"s": np.ones(4, np.float32), "z": np.zeros(4, np.uint8)})
    assert "q1" in message
    assert "[4]" in message
    assert "5" in message
    assert "axis 1" in message


def test_a_block_scale_that_does_not_cover_the_input_is_an_error() -> None:
    x = np.zeros((2, 10), np.float32)
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q2", axis=1, block_size=4)
    message = _run_bad(node, x, {"s": np.ones((2, 2), np.float32), "z": np.zeros((2, 2), np.uint8)})
    assert "q2" in message
    assert "block_size 4" in message
    assert "[2, 2]" in message
    assert "[2, 3]" in message


def test_a_zero_point_of_another_type_than_the_input_is_an_error() -> None:
    x = np.zeros((3,), np.uint8)
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], name="dq")
    message = _run_bad(node, x, {"s": np.array(0.5, np.float32), "z": np.array(1, np.int8)})
    assert "dq" in message
    assert "int8" in message
    assert "uint8" in message


def test_a_float_input_to_an_integer_product_is_an_error() -> None:
    x = np.zeros((2, 3), np.float32)
    node = helper.make_node("MatMulInteger", ["x", "b"], ["y"], name="mmi")
    message = _run_bad(node, x, {"b": np.zeros((3, 2), np.uint8)})
    assert "mmi" in message
    assert "f32" in message
    assert "8-bit" in message


def _encoder(rng: np.random.Generator, d: int = 16, heads: int = 2) -> Any:
    """A BERT encoder layer: multi-head self-attention and a feed-forward block, each with a residual
    and a layer norm."""
    hd = d // heads

    def w(name: str, *shape: int) -> Any:
        return _init(name, rng.normal(0.0, 0.3, shape).astype(np.float32))

    def heads_of(src: str, dst: str) -> list[Any]:
        return [
            helper.make_node("Reshape", [src, "split"], [dst + "_r"]),
            helper.make_node("Transpose", [dst + "_r"], [dst], perm=[0, 2, 1, 3]),
        ]

    nodes = [
        helper.make_node("MatMul", ["x", "wq"], ["q"]),
        helper.make_node("MatMul", ["x", "wk"], ["k"]),
        helper.make_node("MatMul", ["x", "wv"], ["v"]),
        *heads_of("q", "qh"),
        *heads_of("k", "kh"),
        *heads_of("v", "vh"),
        helper.make_node("Transpose", ["kh"], ["kt"], perm=[0, 1, 3, 2]),
        helper.make_node("MatMul", ["qh", "kt"], ["s0"]),
        helper.make_node("Mul", ["s0", "temp"], ["s"]),
        helper.make_node("Softmax", ["s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "vh"], ["c0"]),
        helper.make_node("Transpose", ["c0"], ["c1"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["c1", "merge"], ["c"]),
        helper.make_node("MatMul", ["c", "wo"], ["o"]),
        helper.make_node("Add", ["o", "x"], ["r1"]),
        helper.make_node("LayerNormalization", ["r1", "g1", "b1"], ["n1"], axis=-1),
        helper.make_node("MatMul", ["n1", "wf1"], ["f0"]),
        helper.make_node("Relu", ["f0"], ["f1"]),
        helper.make_node("MatMul", ["f1", "wf2"], ["f2"]),
        helper.make_node("Add", ["f2", "n1"], ["r2"]),
        helper.make_node("LayerNormalization", ["r2", "g2", "b2"], ["y"], axis=-1),
    ]
    inits = [
        w("wq", d, d), w("wk", d, d), w("wv", d, d), w("wo", d, d), w("wf1", d, 2 * d), w("wf2", 2 * d, d),
        _init("split", np.array([0, -1, heads, hd], np.int64)),
        _init("merge", np.array([0, -1, d], np.int64)),
        _init("temp", np.array(1.0 / np.sqrt(hd), np.float32)),
        _init("g1", np.ones(d, np.float32)), _init("b1", np.zeros(d, np.float32)),
        _init("g2", np.ones(d, np.float32)), _init("b2", np.zeros(d, np.float32)),
    ]  # fmt: skip
    return _model(
        nodes, [_info("x", TensorProto.FLOAT, ["n", 6, d])], [_info("y", TensorProto.FLOAT, None)], inits, 17
    )


def test_a_bert_encoder_layer_quantized_dynamically_matches_onnxruntime(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    model = _quantized(tmp_path, _encoder(rng), "dynamic", [])
    assert sum(n.op_type == "MatMulInteger" for n in model.graph.node) >= 6
    x = rng.normal(0.0, 1.0, (3, 6, 16)).astype(np.float32)
    got, want = _burn(model, {"x": x})[0], _ort(model, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-4)


def test_an_output_type_our_backends_do_not_have_is_refused_when_the_model_is_read() -> None:
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], name="q4", output_dtype=TensorProto.INT4)
    model = _model([node], [_info("x", TensorProto.FLOAT, [3])], [_info("y", TensorProto.UINT8, None)])
    model.graph.initializer.append(_init("s", np.array(0.5, np.float32)))
    with pytest.raises(burn_onnx.UnsupportedModelError, match=r"'q4'.*output_dtype int4 is not supported"):
        burn_onnx.load(model, default_device())
