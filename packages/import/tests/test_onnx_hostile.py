"""Hostile ONNX files, each built here: memory bombs (folding, sparse and declared sizes), external data,
exponential and recursive functions, deep nesting, and a seeded fuzz of a valid model's bytes. Every
failure is an ``OnnxImportError`` naming the model, and nothing large is allocated."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
burn_onnx = pytest.importorskip("burn_import.onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

OnnxImportError = burn_onnx.OnnxImportError
OPSET = [helper.make_opsetid("", 17)]


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], **kwargs: Any) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, outputs, **kwargs.pop("graph_kwargs", {}))
    return helper.make_model(graph, opset_imports=kwargs.pop("opsets", OPSET), **kwargs)


def _float(name: str, shape: list[Any] | None) -> Any:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _peak_bytes(fn: Any) -> tuple[Any, int]:
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- folding bombs ----------------------------------------------------------------------------------
def _const(name: str, values: Any, dtype: Any = np.int64) -> Any:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(values, dtype)))


_BOMBS = {
    # 2**34 float elements (64 GiB) from a few bytes each
    "ConstantOfShape": [_const("s", [2**17, 2**17]), helper.make_node("ConstantOfShape", ["s"], ["y"])],
    "Expand": [
        _const("one", [1.0], np.float32),
        _const("s", [2**17, 2**17]),
        helper.make_node("Expand", ["one", "s"], ["y"]),
    ],
    "Tile": [
        _const("one", [[1.0]], np.float32),
        _const("r", [2**17, 2**17]),
        helper.make_node("Tile", ["one", "r"], ["y"]),
    ],
    "Range": [
        _const("a", 0.0, np.float32),
        _const("b", 1e12, np.float32),
        _const("d", 1.0, np.float32),
        helper.make_node("Range", ["a", "b", "d"], ["y"]),
    ],
    # a broadcast of two 2**16-element constants made by ConstantOfShape: 2**32 elements
    "broadcast": [
        _const("s1", [2**16, 1]),
        _const("s2", [1, 2**16]),
        helper.make_node("ConstantOfShape", ["s1"], ["c1"]),
        helper.make_node("ConstantOfShape", ["s2"], ["c2"]),
        helper.make_node("Add", ["c1", "c2"], ["y"]),
    ],
}


@pytest.mark.parametrize("op", list(_BOMBS))
def test_folding_bomb_is_left_to_run_time(op: str) -> None:
    model = _model(_BOMBS[op], [], [_float("y", None)])
    data = model.SerializeToString()
    assert len(data) < 400
    graph, peak = _peak_bytes(lambda: burn_onnx.read_model(data))
    assert peak < 64 * 2**20, f"reading a {len(data)}-byte model allocated {peak} bytes"
    assert graph.nodes[-1].op_type in ("ConstantOfShape", "Expand", "Tile", "Range", "Add")
    assert "y" not in graph.constants


def test_folding_below_the_limit_still_folds() -> None:
    nodes = [_const("s", [3, 4]), helper.make_node("ConstantOfShape", ["s"], ["y"])]
    graph = burn_onnx.read_model(_model(nodes, [], [_float("y", None)]))
    assert not graph.nodes
    np.testing.assert_array_equal(graph.constants["y"], np.zeros((3, 4), np.float32))
    limits = burn_onnx.OnnxLimits(max_folded_bytes=32)  # 12 elements x 8 bytes are over it
    assert [
        n.op_type for n in burn_onnx.read_model(_model(nodes, [], [_float("y", None)]), limits=limits).nodes
    ] == ["ConstantOfShape"]


# -- declared sizes -----------------------------------------------------------------------------------
def _tensor(name: str, dims: list[int], raw: bytes | None = None, floats: list[float] | None = None) -> Any:
    """A float ``TensorProto`` with the given fields, unchecked (onnx's helper refuses inconsistent ones)."""
    tensor = onnx.TensorProto(name=name, data_type=TensorProto.FLOAT, dims=dims)
    if raw is not None:
        tensor.raw_data = raw
    if floats is not None:
        tensor.float_data.extend(floats)
    return tensor


def _with_initializer(tensor: Any) -> bytes:
    model = _model(
        [helper.make_node("Identity", [tensor.name], ["y"])],
        [],
        [_float("y", None)],
        graph_kwargs={"initializer": [tensor]},
    )
    return bytes(model.SerializeToString())


def test_raw_data_shorter_than_dims_is_refused() -> None:
    tensor = _tensor("w", [1000, 1000], raw=b"\0" * 16)
    with pytest.raises(
        OnnxImportError, match=r"ONNX model \(\d+ bytes\): .*'w'.*raw data of 16 bytes, expected 4000000"
    ):
        burn_onnx.read_model(_with_initializer(tensor))


def test_typed_data_count_must_match_dims() -> None:
    tensor = _tensor("w", [4], floats=[1.0, 2.0])
    with pytest.raises(OnnxImportError, match=r"'w'.*holds 2 values, expected 4"):
        burn_onnx.read_model(_with_initializer(tensor))


def test_huge_declared_tensor_is_refused_before_allocation() -> None:
    tensor = _tensor("w", [2**20, 2**20], raw=b"")
    with pytest.raises(OnnxImportError, match=r"'w'.*over the limit of \d+ \(OnnxLimits.max_tensor_bytes\)"):
        burn_onnx.read_model(_with_initializer(tensor))


def test_negative_dims_are_refused() -> None:
    tensor = _tensor("w", [-2, -2], floats=[1.0, 2.0, 3.0, 4.0])
    with pytest.raises(OnnxImportError, match="negative dimension"):
        burn_onnx.read_model(_with_initializer(tensor))


def test_sparse_bomb_is_refused() -> None:
    values = numpy_helper.from_array(np.array([1.0], np.float32), "sp")
    indices = numpy_helper.from_array(np.array([5], np.int64), "sp_i")
    sparse = helper.make_sparse_tensor(values, indices, [2**40])
    model = _model(
        [helper.make_node("Identity", ["sp"], ["y"])],
        [],
        [_float("y", None)],
        graph_kwargs={"sparse_initializer": [sparse]},
    )
    data = model.SerializeToString()

    def read() -> str:
        with pytest.raises(OnnxImportError) as info:
            burn_onnx.read_model(data)
        return str(info.value)

    message, peak = _peak_bytes(read)
    assert peak < 16 * 2**20
    assert "sparse tensor 'sp' (dims [1099511627776])" in message
    assert "OnnxLimits.max_tensor_bytes" in message


def test_sparse_index_out_of_range_is_refused() -> None:
    values = numpy_helper.from_array(np.array([1.0], np.float32), "sp")
    indices = numpy_helper.from_array(np.array([7], np.int64), "sp_i")
    sparse = helper.make_sparse_tensor(values, indices, [4])
    model = _model(
        [helper.make_node("Identity", ["sp"], ["y"])],
        [],
        [_float("y", None)],
        graph_kwargs={"sparse_initializer": [sparse]},
    )
    with pytest.raises(OnnxImportError, match="index is out of range"):
        burn_onnx.read_model(model.SerializeToString())


# -- external data ------------------------------------------------------------------------------------
def _external_model(location: str, length: int | None = None) -> Any:
    tensor = _tensor("w", [4])
    tensor.data_location = TensorProto.EXTERNAL
    entries = {"location": location, "offset": "0"} | ({"length": str(length)} if length is not None else {})
    for key, value in entries.items():
        tensor.external_data.add(key=key, value=value)
    return _model(
        [helper.make_node("Neg", ["w"], ["y"])],
        [],
        [_float("y", [4])],
        graph_kwargs={"initializer": [tensor]},
    )


def test_external_data_inside_the_folder_is_read(tmp_path: Path) -> None:
    weights = np.array([1.0, -2.0, 3.0, 0.5], np.float32)
    (tmp_path / "w.bin").write_bytes(weights.tobytes())
    path = tmp_path / "m.onnx"
    path.write_bytes(_external_model("w.bin").SerializeToString())
    np.testing.assert_array_equal(burn_onnx.load(path)().to_numpy(), -weights)
    with pytest.raises(OnnxImportError, match="refused by limits"):
        burn_onnx.read_model(path, limits=burn_onnx.OnnxLimits(external_data=False))


@pytest.mark.parametrize(
    ("location", "length", "message"),
    [
        ("../secret.bin", None, "outside the model's folder"),
        ("/etc/passwd", None, "outside the model's folder"),
        ("w.bin", 4, r"length 4, expected 16 bytes"),
        ("short.bin", None, r"expected 16 bytes within a file of 8"),
        ("missing.bin", None, "not found"),
    ],
)
def test_external_data_is_bounded(tmp_path: Path, location: str, length: int | None, message: str) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (tmp_path / "secret.bin").write_bytes(b"\0" * 16)
    (folder / "w.bin").write_bytes(b"\0" * 16)
    (folder / "short.bin").write_bytes(b"\0" * 8)
    path = folder / "m.onnx"
    path.write_bytes(_external_model(location, length).SerializeToString())
    with pytest.raises(OnnxImportError, match=rf"ONNX file '.*m.onnx': tensor 'w'.*{message}"):
        burn_onnx.read_model(path)


def test_external_data_without_a_folder_is_refused() -> None:
    with pytest.raises(OnnxImportError, match="external file: no folder"):
        burn_onnx.read_model(_external_model("w.bin").SerializeToString())


# -- functions and nesting ----------------------------------------------------------------------------
def _function(name: str, callee: str, calls: int = 2) -> Any:
    nodes = []
    previous = "x"
    for i in range(calls):
        nodes.append(helper.make_node(callee, [previous], [f"t{i}"], domain="local"))
        previous = f"t{i}"
    nodes.append(helper.make_node("Identity", [previous], ["y"]))
    return helper.make_function("local", name, ["x"], ["y"], nodes, OPSET)


def _calling(name: str, functions: list[Any]) -> Any:
    return _model(
        [helper.make_node(name, ["x"], ["y"], domain="local")],
        [_float("x", [2])],
        [_float("y", [2])],
        opsets=[*OPSET, helper.make_opsetid("local", 1)],
        functions=functions,
    )


def test_exponential_functions_stop_at_the_node_limit() -> None:
    leaf = helper.make_function("local", "f0", ["x"], ["y"], [helper.make_node("Neg", ["x"], ["y"])], OPSET)
    functions = [leaf] + [_function(f"f{k}", f"f{k - 1}") for k in range(1, 41)]  # 2**40 nodes
    data = _calling("f40", functions).SerializeToString()
    start = time.perf_counter()
    with pytest.raises(OnnxImportError, match=r"more than 1000000 nodes \(OnnxLimits.max_nodes\)"):
        burn_onnx.read_model(data)
    assert time.perf_counter() - start < 5
    small = _calling("f3", functions[:4])  # 8 negations
    model = burn_onnx.load(small)
    np.testing.assert_array_equal(model(np.array([1.0, -2.0], np.float32)).to_numpy(), [1.0, -2.0])
    with pytest.raises(OnnxImportError, match="more than 4 nodes"):
        burn_onnx.read_model(small, limits=burn_onnx.OnnxLimits(max_nodes=4))


def test_recursive_functions_are_refused() -> None:
    with pytest.raises(OnnxImportError, match=r"recursive ONNX function: local.f -> local.f"):
        burn_onnx.read_model(_calling("f", [_function("f", "f", 1)]).SerializeToString())
    mutual = [_function("f", "g", 1), _function("g", "f", 1)]
    with pytest.raises(OnnxImportError, match=r"recursive ONNX function: local.f -> local.g -> local.f"):
        burn_onnx.read_model(_calling("f", mutual).SerializeToString())


def _nested_ifs(depth: int) -> Any:
    """``depth`` nested ``If``s whose innermost branch is ``Identity(x)``, built in place (copying a
    message deeper than protobuf's parser allows fails)."""
    model = _model([], [helper.make_tensor_value_info("c", TensorProto.BOOL, []), _float("x", [2])], [])
    graph = model.graph
    for level in range(depth, 0, -1):
        graph.output.append(_float(f"y{level}", [2]))
        node = graph.node.add(op_type="If", input=["c"], output=[f"y{level}"])
        else_attr = node.attribute.add(name="else_branch", type=onnx.AttributeProto.GRAPH)
        else_attr.g.CopyFrom(
            helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [], [_float("e", [2])])
        )
        then_attr = node.attribute.add(name="then_branch", type=onnx.AttributeProto.GRAPH)
        graph = then_attr.g
        graph.name = f"level{level}"
    graph.output.append(_float("y0", [2]))
    graph.node.add(op_type="Identity", input=["x"], output=["y0"])
    return model


def test_deep_nesting_is_refused() -> None:
    with pytest.raises(OnnxImportError, match=r"nest deeper than 64 \(OnnxLimits.max_depth\)"):
        burn_onnx.read_model(_nested_ifs(80))  # an in-memory proto: no parser depth limit
    with pytest.raises(OnnxImportError, match=r"ONNX model \(\d+ bytes\): .*nest deeper than 8"):
        burn_onnx.read_model(_nested_ifs(10).SerializeToString(), limits=burn_onnx.OnnxLimits(max_depth=8))
    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(burn_onnx.load(_nested_ifs(5))(np.array(True), x).to_numpy(), x)


# -- fuzz ---------------------------------------------------------------------------------------------
def _fuzz_base() -> bytes:
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("Reshape", ["r", "shape"], ["f"]),
        helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1),
    ]
    initializers = [
        numpy_helper.from_array(rng.standard_normal((2, 1, 3, 3)).astype(np.float32), "w"),
        numpy_helper.from_array(np.zeros(2, np.float32), "b"),
        numpy_helper.from_array(np.array([1, -1], np.int64), "shape"),
        numpy_helper.from_array(rng.standard_normal((3, 32)).astype(np.float32), "fc"),
    ]
    model = _model(
        nodes, [_float("x", [1, 1, 4, 4])], [_float("y", [1, 3])], graph_kwargs={"initializer": initializers}
    )
    return bytes(model.SerializeToString())


def test_fuzzed_models_fail_only_with_onnx_import_error() -> None:
    base = _fuzz_base()
    rng = np.random.default_rng(1234)
    x = np.ones((1, 1, 4, 4), np.float32)
    failures = 0
    for trial in range(300):
        data = bytearray(base)
        if trial % 3 == 0:
            data = data[: int(rng.integers(0, len(data)))]
        else:
            for _ in range(int(rng.integers(1, 8))):
                data[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
        try:
            burn_onnx.load(bytes(data)).run(x)
        except OnnxImportError:
            failures += 1
        except Exception as error:  # pragma: no cover - the failure being tested for
            pytest.fail(f"trial {trial}: {type(error).__name__} escaped: {error}")
    assert failures > 50  # the mutations do break models: the test exercises the error paths


def _mutate(model: Any, rng: np.random.Generator) -> None:
    """One random structural change of a parsed model: dims, element types, op types, attribute values,
    inputs or node order."""
    graph = model.graph
    choice = int(rng.integers(0, 6))
    if choice == 0:
        tensor = graph.initializer[int(rng.integers(0, len(graph.initializer)))]
        del tensor.dims[:]
        tensor.dims.extend(int(d) for d in rng.integers(-2, 40, int(rng.integers(0, 5))))
    elif choice == 1:
        graph.initializer[int(rng.integers(0, len(graph.initializer)))].data_type = int(rng.integers(0, 30))
    elif choice == 2:
        ops = [
            "Reshape",
            "Gemm",
            "Conv",
            "Relu",
            "Expand",
            "Tile",
            "ConstantOfShape",
            "Split",
            "Concat",
            "Slice",
        ]
        graph.node[int(rng.integers(0, len(graph.node)))].op_type = ops[int(rng.integers(0, len(ops)))]
    elif choice == 3:
        node = graph.node[int(rng.integers(0, len(graph.node)))]
        attr = node.attribute.add(name=["axis", "pads", "transB", "group", "to"][int(rng.integers(0, 5))])
        if rng.random() < 0.5:
            attr.type, attr.i = onnx.AttributeProto.INT, int(rng.integers(-(2**40), 2**40))
        else:
            attr.type = onnx.AttributeProto.INTS
            attr.ints.extend(int(v) for v in rng.integers(-5, 5, int(rng.integers(0, 6))))
    elif choice == 4:
        node = graph.node[int(rng.integers(0, len(graph.node)))]
        if node.input:
            del node.input[int(rng.integers(0, len(node.input)))]
    else:
        nodes = list(graph.node)
        rng.shuffle(nodes)  # type: ignore[arg-type]
        del graph.node[:]
        graph.node.extend(nodes)


def test_structurally_fuzzed_models_fail_only_with_onnx_import_error() -> None:
    base = _fuzz_base()
    rng = np.random.default_rng(99)
    x = np.ones((1, 1, 4, 4), np.float32)
    for trial in range(200):
        model = onnx.ModelProto()
        model.ParseFromString(base)
        for _ in range(int(rng.integers(1, 4))):
            _mutate(model, rng)
        try:
            burn_onnx.load(model).run(x)
        except OnnxImportError:
            pass
        except Exception as error:  # pragma: no cover - the failure being tested for
            pytest.fail(f"trial {trial}: {type(error).__name__} escaped: {error}")


def test_reshape_folds_up_to_the_limit_of_its_data() -> None:
    """A ``Reshape`` outputs as many elements as its data: bounded by that, not by its inputs' sizes."""
    data = numpy_helper.from_array(np.arange(1000, dtype=np.int64), "data")
    nodes = [_const("shape", [10, 100]), helper.make_node("Reshape", ["data", "shape"], ["y"])]
    model = _model(
        nodes,
        [],
        [helper.make_tensor_value_info("y", TensorProto.INT64, [10, 100])],
        graph_kwargs={"initializer": [data]},
    )
    graph = burn_onnx.read_model(model, limits=burn_onnx.OnnxLimits(max_folded_bytes=8000))
    assert not graph.nodes
    np.testing.assert_array_equal(graph.constants["y"], np.arange(1000).reshape(10, 100))
    graph = burn_onnx.read_model(model, limits=burn_onnx.OnnxLimits(max_folded_bytes=7999))
    assert [n.op_type for n in graph.nodes] == ["Reshape"]
