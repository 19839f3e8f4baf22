"""The bounds on what reading an ONNX model may allocate and expand (``OnnxLimits``), and the checks of a
tensor's declared size against the bytes it holds, made before anything is allocated."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._errors import OnnxImportError

__all__ = ["OnnxLimits", "check_tensor", "load_external_data"]


@dataclass(frozen=True)
class OnnxLimits:
    """How much reading an ONNX model may allocate and expand; past a limit the read stops with an
    ``OnnxImportError`` naming the limit (constant folding instead leaves the node to run at call time).

    Attributes:
        max_tensor_bytes: the largest tensor a file may declare: an initializer, a constant, a sparse
            tensor once dense, a tensor in external data (default 4 GiB).
        max_folded_bytes: the largest value constant folding computes while reading; a node whose
            output could be larger (a ``ConstantOfShape``, ``Expand``, ``Tile`` or ``Range`` of a huge
            size) is not folded and runs when the model is called (default 64 MiB).
        max_nodes: the most nodes the graph may have once ONNX functions are expanded, subgraphs
            included (default 1,000,000).
        max_depth: the deepest nesting of subgraphs and function calls (default 64).
        external_data: whether tensors stored in external files are read (only files inside the model
            file's folder, of exactly the declared size; a model given as bytes or a proto has no folder).

    Example:
        >>> limits = OnnxLimits(max_tensor_bytes=16 * 2**30, max_nodes=5_000_000)
        >>> model = burn_import.onnx.load("big.onnx", device, limits=limits)  # doctest: +SKIP
    """

    max_tensor_bytes: int = 4 * 2**30
    max_folded_bytes: int = 64 * 2**20
    max_nodes: int = 1_000_000
    max_depth: int = 64
    external_data: bool = True


def _itemsize(onnx: Any, tensor: Any) -> tuple[float, str]:
    """Bytes per element of a tensor's element type (halves and quarters for packed 4- and 2-bit types),
    and the type's name."""
    try:
        name = onnx.TensorProto.DataType.Name(tensor.data_type)
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)
    except Exception:
        raise OnnxImportError(
            f"tensor {tensor.name!r}: element type {tensor.data_type} is not an ONNX element type"
        ) from None
    if name.endswith(("INT4", "FLOAT4E2M1")):
        return 0.5, name
    if name.endswith("INT2"):
        return 0.25, name
    return (float(dtype.itemsize) if name != "STRING" else 0.0), name


def check_tensor(onnx: Any, tensor: Any, limits: OnnxLimits) -> int:
    """Check a ``TensorProto``'s dims against the data it holds and the limits, before it is read;
    returns its number of elements.

    Raises:
        OnnxImportError: naming the tensor, its dims and type, and what its data holds.
    """
    dims = [int(d) for d in tensor.dims]
    itemsize, type_name = _itemsize(onnx, tensor)
    what = f"tensor {tensor.name!r} ({type_name}, dims {dims})"
    if any(d < 0 for d in dims):
        raise OnnxImportError(f"{what}: negative dimension")
    count = math.prod(dims)
    nbytes = math.ceil(count * itemsize)
    if nbytes > limits.max_tensor_bytes:
        raise OnnxImportError(
            f"{what}: declares {nbytes} bytes, over the limit of {limits.max_tensor_bytes} "
            "(OnnxLimits.max_tensor_bytes)"
        )
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        raise OnnxImportError(f"{what}: its data is in an external file that was not read")
    if tensor.HasField("raw_data"):
        if len(tensor.raw_data) != nbytes or type_name == "STRING":
            raise OnnxImportError(
                f"{what}: raw data of {len(tensor.raw_data)} bytes, expected {nbytes} "
                f"({count} elements of {itemsize} bytes)"
            )
        return count
    held = (
        len(tensor.float_data)
        + len(tensor.int32_data)
        + len(tensor.string_data)
        + len(tensor.int64_data)
        + len(tensor.double_data)
        + len(tensor.uint64_data)
    )
    if "COMPLEX" in type_name:
        expected = {2 * count}
    elif itemsize < 1:
        expected = {count, math.ceil(count * itemsize)}  # packed or one value per entry
    else:
        expected = {count}
    if held not in expected:
        raise OnnxImportError(f"{what}: holds {held} values, expected {min(expected)}")
    return count


def load_external_data(onnx: Any, proto: Any, folder: Path | None, limits: OnnxLimits) -> None:
    """Read, in place, the data of every tensor of ``proto`` stored in an external file: only a file
    inside ``folder`` (no absolute path, no ``..`` out of it, no link leading out), holding the declared
    offset and length, which must be the tensor's size.

    Raises:
        OnnxImportError: naming the tensor and the file.
    """
    from onnx.external_data_helper import ExternalDataInfo

    for tensor in _all_tensors(onnx, proto):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        if folder is None or not limits.external_data:
            why = "no folder (the model was not given as a path)" if folder is None else "refused by limits"
            raise OnnxImportError(
                f"tensor {tensor.name!r}: its data is in an external file: {why} (OnnxLimits.external_data)"
            )
        info = ExternalDataInfo(tensor)
        location = str(info.location)
        root = folder.resolve()
        target = (root / location).resolve()
        if not location or Path(location).is_absolute() or not target.is_relative_to(root):
            raise OnnxImportError(
                f"tensor {tensor.name!r}: external data location {location!r} is outside the model's "
                f"folder {str(folder)!r}"
            )
        if not target.is_file():
            raise OnnxImportError(f"tensor {tensor.name!r}: external data file {location!r} not found")
        dims = [int(d) for d in tensor.dims]
        itemsize, type_name = _itemsize(onnx, tensor)
        nbytes = math.ceil(math.prod(dims) * itemsize) if all(d >= 0 for d in dims) else -1
        offset = int(info.offset or 0)
        length = nbytes if info.length in (None, 0) and nbytes > 0 else int(info.length or 0)
        size = target.stat().st_size
        if nbytes < 0 or length != nbytes or offset < 0 or offset + length > size:
            raise OnnxImportError(
                f"tensor {tensor.name!r} ({type_name}, dims {dims}): external data in {location!r} at "
                f"offset {offset}, length {length}, expected {nbytes} bytes within a file of {size}"
            )
        if nbytes > limits.max_tensor_bytes:
            raise OnnxImportError(
                f"tensor {tensor.name!r}: declares {nbytes} bytes, over the limit of "
                f"{limits.max_tensor_bytes} (OnnxLimits.max_tensor_bytes)"
            )
        with open(target, "rb") as file:
            file.seek(offset)
            tensor.raw_data = file.read(length)
        del tensor.external_data[:]
        tensor.data_location = onnx.TensorProto.DEFAULT


def _all_tensors(onnx: Any, proto: Any) -> list[Any]:
    """Every ``TensorProto`` of a model: initializers, sparse ones' parts, attribute tensors, in the
    graph, its subgraphs and the model's functions (walked with a stack, not recursion)."""
    found: list[Any] = []
    graphs: list[Any] = [proto.graph]
    node_lists: list[Any] = [f.node for f in proto.functions]
    while graphs or node_lists:
        if graphs:
            graph = graphs.pop()
            found.extend(graph.initializer)
            for sparse in graph.sparse_initializer:
                found.extend((sparse.values, sparse.indices))
            node_lists.append(graph.node)
            continue
        for node in node_lists.pop():
            for attr in node.attribute:
                if attr.HasField("t"):
                    found.append(attr.t)
                found.extend(attr.tensors)
                if attr.HasField("sparse_tensor"):
                    found.extend((attr.sparse_tensor.values, attr.sparse_tensor.indices))
                if attr.HasField("g"):
                    graphs.append(attr.g)
                graphs.extend(attr.graphs)
    return found
