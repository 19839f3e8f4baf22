"""quantize_weights_gptq: GPTQ against an independent float64 NumPy reference (the original one-row-at-a-time
update of the full inverse Hessian, no Cholesky factor, no lazy blocks), the property that it beats
rounding to nearest on the layer's outputs, sequential calibration through a model, records, and the
errors for bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, Tensor, TensorData
from burn_backend.activation import relu
from burn_backend.quantization import QuantizedData, QuantParam, QuantScheme, QuantStore, QuantValue
from burn_nn import (
    Calibration,
    EmbeddingConfig,
    LinearConfig,
    Module,
    Quantizer,
    TransformerEncoderConfig,
    TransformerEncoderInput,
    quantize_weights_gptq,
)
from burn_nn._gptq import gptq
from burn_record import NamedMpkFileRecorder

F64 = np.float64
Q4_BLOCKS = QuantScheme().with_value(QuantValue.Q4S).with_block_size(16)
Q4F_PACKED = (
    QuantScheme()
    .with_value(QuantValue.Q4F)
    .with_block_size(16)
    .with_param(QuantParam.F16)
    .with_store(QuantStore.PACKED_U32)
)


def _reference_round(row: np.ndarray, scheme: QuantScheme) -> np.ndarray:
    """Min-max rounding of one row in NumPy: per block ``max|x| / span`` in the scale dtype, values
    rounded in f32 and clipped to the value range."""
    low, high = scheme.value.range
    span = (high - low) / 2.0
    size = scheme.block_size or row.size
    blocks = row.astype(np.float32).reshape(-1, size)
    scales = (np.abs(blocks).max(axis=1) / np.float32(span)).astype(scheme.param.dtype.numpy)
    scales = np.where(scales > 0, scales, 1).astype(np.float32)
    values = np.clip(np.round(blocks / scales[:, None]), low, high)
    return (values * scales[:, None]).astype(F64).reshape(row.shape)


def _reference_gptq(weight: np.ndarray, x: np.ndarray, scheme: QuantScheme, damping: float) -> np.ndarray:
    """GPTQ in its first form (optimal brain quantization, rows in order): quantize row i, spread its
    error over the later rows by the column of the current inverse Hessian, then remove row i from the
    inverse Hessian by one step of Gaussian elimination."""
    w = weight.astype(F64).copy()
    h = 2.0 * x.T @ x / x.shape[0]
    h += damping * np.mean(np.diag(h)) * np.eye(h.shape[0])
    inverse = np.linalg.inv(h)
    out = np.empty_like(w)
    for i in range(w.shape[0]):
        out[i] = _reference_round(w[i], scheme)
        error = (w[i] - out[i]) / inverse[i, i]
        w[i + 1 :] -= np.outer(inverse[i + 1 :, i], error)
        inverse -= np.outer(inverse[:, i], inverse[i, :]) / inverse[i, i]
    return out


def _correlated_inputs(rng: np.random.Generator, rows: int, width: int) -> np.ndarray:
    """Inputs with correlated features and unequal scales, as a layer's activations are."""
    mixing = rng.standard_normal((width, width)) / np.sqrt(width)
    return rng.standard_normal((rows, width)) @ mixing * rng.uniform(0.2, 3.0, width)


@pytest.mark.parametrize("block_rows", [128, 5])
def test_gptq_equals_the_reference_algorithm(block_rows: int) -> None:
    rng = np.random.default_rng(0)
    x = _correlated_inputs(rng, 256, 24)
    weight = rng.standard_normal((24, 32))
    expected = _reference_gptq(weight, x, Q4_BLOCKS, 0.01)
    got, scales = gptq(weight, 2.0 * x.T @ x / 256, Q4_BLOCKS, Calibration.MinMax, 0.01, block_rows, False)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)
    assert scales.shape == (24, 2)
    # the returned numbers are exactly what quantizing them again with the scales stores
    data = QuantizedData.quantize(TensorData(got.astype(np.float32)), Q4_BLOCKS, scales)
    np.testing.assert_array_equal(data.dequantize().to_numpy(), got.astype(np.float32))


def test_act_order_is_the_reference_on_permuted_rows() -> None:
    rng = np.random.default_rng(1)
    x = _correlated_inputs(rng, 200, 16)
    weight = rng.standard_normal((16, 16))
    order = np.argsort(-np.diag(x.T @ x), kind="stable")
    expected = np.empty_like(weight)
    expected[order] = _reference_gptq(weight[order], x[:, order], Q4_BLOCKS, 0.05)
    got, _ = gptq(weight, 2.0 * x.T @ x / 200, Q4_BLOCKS, Calibration.MinMax, 0.05, 4, True)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "scheme",
    [Q4_BLOCKS, Q4F_PACKED, QuantScheme(), QuantScheme().with_value(QuantValue.Q2S).with_block_size(8)],
    ids=str,
)
def test_output_error_is_below_round_to_nearest(seed: int, scheme: QuantScheme) -> None:
    rng = np.random.default_rng(seed)
    d_in, d_out = int(rng.integers(8, 40)), 16 * int(rng.integers(1, 4))
    x = _correlated_inputs(rng, 4 * d_in, d_in)
    weight = rng.standard_normal((d_in, d_out))
    got, _ = gptq(weight, 2.0 * x.T @ x / x.shape[0], scheme, Calibration.MinMax, 0.01, 16, seed % 2 == 0)
    nearest = QuantizedData.quantize(TensorData(weight.astype(np.float32)), scheme).dequantize().to_numpy()
    gptq_error = np.linalg.norm(x @ weight - x @ got)
    nearest_error = np.linalg.norm(x @ weight - x @ nearest.astype(F64))
    assert gptq_error < 0.9 * nearest_error, (gptq_error, nearest_error)


def test_gptq_with_min_error_scales_beats_their_rounding_to_nearest() -> None:
    rng = np.random.default_rng(7)
    x = _correlated_inputs(rng, 160, 40)
    weight = rng.standard_normal((40, 32))
    got, scales = gptq(weight, 2.0 * x.T @ x / 160, Q4F_PACKED, Calibration.MinError, 0.01, 16, True)
    data = QuantizedData.quantize(TensorData(weight.astype(np.float32)), Q4F_PACKED, None)
    nearest_scales = Calibration.MinError.scales(weight, Q4F_PACKED)
    nearest = QuantizedData.quantize(TensorData(weight.astype(np.float32)), Q4F_PACKED, nearest_scales)
    assert not np.array_equal(nearest.scales, data.scales)  # min-error scales differ from min-max ones
    nearest_error = np.linalg.norm(x @ weight - x @ nearest.dequantize().to_numpy().astype(F64))
    assert np.linalg.norm(x @ weight - x @ got) < 0.9 * nearest_error
    assert scales.dtype == np.float16


class _Mlp(Module):
    def __init__(self, device: Device) -> None:
        self.embed = EmbeddingConfig(10, 32).init(device)
        self.hidden = [LinearConfig(32, 48).init(device), LinearConfig(48, 32).init(device)]
        self.head = LinearConfig(32, 16).init(device)

    def forward(self, ids: Tensor) -> Tensor:
        x = self.embed(ids)
        for layer in self.hidden:
            x = relu(layer(x))
        return self.head(x)


def _batches(device: Device, count: int, seed: int = 0) -> list[Tensor]:
    rng = np.random.default_rng(seed)
    return [Tensor.from_data(rng.integers(0, 10, (8, 16)), device) for _ in range(count)]


def test_sequential_calibration_quantizes_each_layer_from_its_quantized_inputs(inner_device: Device) -> None:
    model = _Mlp(inner_device)
    quantizer = Quantizer(Calibration.MinMax, Q4_BLOCKS)
    batches = _batches(inner_device, 3)
    quantized = quantize_weights_gptq(model, quantizer, batches, act_order=False)
    params = dict(quantized.named_params())
    originals = {path: _host(param.val()) for path, param in model.named_params()}
    for path, param in params.items():
        assert param.quant_scheme is not None, path
        assert not param.require_grad
        if not path.endswith("weight") or path == "embed.weight":  # the others: rounded to nearest
            nearest = QuantizedData.quantize(
                TensorData(originals[path].astype(np.float32)), param.quant_scheme
            )
            assert param.val().quantized_data() == nearest, path
    assert model.head.weight.quant_scheme is None  # the original is unchanged
    assert "forward" not in vars(quantized.head)
    assert "forward" not in vars(model.head)

    # the reference, in NumPy: each layer's inputs come from the earlier layers quantized already
    table = _host(params["embed.weight"].val())
    xs = np.concatenate([table[ids.to_data().to_numpy()].reshape(-1, 32) for ids in batches])
    names = ["hidden.0", "hidden.1", "head"]
    for index, name in enumerate(names):
        expected = _reference_gptq(originals[f"{name}.weight"], xs, Q4_BLOCKS, 0.01)
        got = _host(params[f"{name}.weight"].val())
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5, err_msg=name)
        xs = xs @ got + _host(params[f"{name}.bias"].val())
        xs = np.maximum(xs, 0) if index < 2 else xs


def _host(tensor: Tensor) -> np.ndarray:
    if tensor.is_quantized:
        tensor = tensor.dequantize()
    return tensor.to_data().to_numpy().astype(F64)


def test_gptq_modules_save_and_load_through_records(inner_device: Device, tmp_path: Path) -> None:
    model = _Mlp(inner_device)
    quantizer = Quantizer(Calibration.MinMax, Q4F_PACKED)
    quantized = quantize_weights_gptq(model, quantizer, _batches(inner_device, 2))
    ids = _batches(inner_device, 1, seed=5)[0]
    expected = quantized(ids).to_data().to_numpy()
    path = quantized.save_file(tmp_path / "gptq", NamedMpkFileRecorder())
    loaded = model.quantize_weights(quantizer).load_file(path, NamedMpkFileRecorder(), inner_device)
    assert loaded.head.weight.quant_scheme == Q4F_PACKED
    for (name, param), (_, original) in zip(loaded.named_params(), quantized.named_params()):
        assert param.val().quantized_data() == original.val().quantized_data(), name
    np.testing.assert_array_equal(loaded(ids).to_data().to_numpy(), expected)
    float_size = model.save_file(tmp_path / "f32", NamedMpkFileRecorder()).stat().st_size
    assert path.stat().st_size < 0.3 * float_size


def test_layers_on_one_input_share_a_pass(inner_device: Device) -> None:
    encoder = TransformerEncoderConfig(d_model=32, d_ff=64, n_heads=2, n_layers=2, dropout=0.0).init(
        inner_device
    )
    rng = np.random.default_rng(3)
    batches = [Tensor.from_data(rng.standard_normal((2, 8, 32)).astype(np.float32), inner_device)]
    calls = []

    def forward(module: Module, x: Tensor) -> Tensor:
        calls.append(1)
        return module(TransformerEncoderInput(x))  # type: ignore[no-any-return]

    quantized = quantize_weights_gptq(
        encoder, Quantizer(Calibration.MinMax, Q4_BLOCKS), batches, forward=forward
    )
    # per layer: query/key/value, output, the two feed-forward layers
    assert len(calls) == 2 * 4
    assert all(param.quant_scheme == Q4_BLOCKS for _, param in quantized.named_params())
    x = batches[0]
    error = (quantized(TransformerEncoderInput(x)) - encoder(TransformerEncoderInput(x))).abs().max()
    assert 0 < float(error.to_data().to_numpy().reshape(-1)[0]) < 0.5


def test_targets_choose_the_layers_and_unreached_ones_are_rounded(inner_device: Device) -> None:
    model = _Mlp(inner_device)
    quantizer = Quantizer(Calibration.Percentile(99.0), Q4_BLOCKS)
    rtn = model.quantize_weights(quantizer)
    batches = _batches(inner_device, 2)
    only_hidden = quantize_weights_gptq(
        model, quantizer, batches, targets=lambda path, layer: path.startswith("hidden")
    )
    assert only_hidden.head.weight.val().quantized_data() == rtn.head.weight.val().quantized_data()
    assert only_hidden.hidden[0].weight.val().quantized_data() != rtn.hidden[0].weight.val().quantized_data()
    # a forward that stops before the head: the head is rounded to nearest
    shallow = quantize_weights_gptq(
        model, quantizer, batches, forward=lambda m, ids: m.hidden[0](m.embed(ids))
    )
    assert shallow.head.weight.val().quantized_data() == rtn.head.weight.val().quantized_data()
    assert shallow.hidden[1].weight.val().quantized_data() == rtn.hidden[1].weight.val().quantized_data()
    assert shallow.hidden[0].weight.val().quantized_data() != rtn.hidden[0].weight.val().quantized_data()
    # weights quantized already are kept
    int8 = Quantizer(Calibration.MinMax, QuantScheme())
    model.head = model.head.quantize_weights(int8)
    mixed = quantize_weights_gptq(model, quantizer, batches)
    assert mixed.head.weight.quant_scheme == QuantScheme()


class _NoWeight(Module):
    def forward(self, x: Tensor) -> Tensor:
        return x


@pytest.mark.parametrize(
    ("arguments", "error", "match"),
    [
        ({"batches": []}, ValueError, "no calibration batches"),
        ({"quantizer": QuantScheme()}, TypeError, "expected a Quantizer, got QuantScheme"),
        ({"damping": 0.0}, ValueError, "damping must be positive and finite, got 0.0"),
        ({"damping": float("nan")}, ValueError, "damping must be positive"),
        ({"block_rows": 0}, ValueError, "block_rows must be an int >= 1, got 0"),
        ({"targets": lambda path, layer: False}, ValueError, "_Mlp has no layer to calibrate"),
        (
            {"targets": lambda path, layer: path == "embed"},
            ValueError,
            r"embed was called on i64 \[8, 16\], expected a float tensor \[..., 10\]",
        ),
        (
            {"forward": lambda m, ids: m.head(m.embed(ids)[..., :16])},
            ValueError,
            r"head was called on f32 \[8, 16, 16\], expected a float tensor \[..., 32\]",
        ),
        (
            {"forward": lambda m, ids: m.head(m.embed(ids) * float("inf"))},
            ValueError,
            "head: its calibration inputs are not all finite",
        ),
    ],
)
def test_bad_input_is_refused_and_leaves_the_model_as_it_was(
    inner_device: Device, arguments: dict[str, Any], error: type[Exception], match: str
) -> None:
    model = _Mlp(inner_device)
    before = {path: _host(param.val()) for path, param in model.named_params()}
    call: dict[str, Any] = {
        "quantizer": Quantizer(Calibration.MinMax, Q4_BLOCKS),
        "batches": _batches(inner_device, 1),
    }
    call.update(arguments)
    with pytest.raises(error, match=match):
        quantize_weights_gptq(model, call.pop("quantizer"), call.pop("batches"), **call)
    for path, param in model.named_params():
        assert param.quant_scheme is None
        np.testing.assert_array_equal(_host(param.val()), before[path])
    assert not any("forward" in vars(layer) for layer in [*model.hidden, model.head])


def test_a_target_without_a_weight_is_refused(inner_device: Device) -> None:
    model = _Mlp(inner_device)
    model.extra = _NoWeight()
    with pytest.raises(TypeError, match=r"extra \(_NoWeight\) has no float weight"):
        quantize_weights_gptq(
            model, Quantizer(), _batches(inner_device, 1), targets=lambda path, layer: path == "extra"
        )


def test_a_singular_hessian_names_the_layer() -> None:
    x = np.ones((4, 3))
    with pytest.raises(
        ValueError, match=r"layer\.weight: the Hessian of its 3 inputs is not positive definite"
    ):
        gptq(np.ones((3, 16)), -(x.T @ x), Q4_BLOCKS, Calibration.MinMax, 0.01, 8, False, "layer.weight")
