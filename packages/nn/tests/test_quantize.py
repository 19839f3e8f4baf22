"""Module.quantize_weights: the quantized parameters against NumPy references (the codec's round trip,
percentile scales), outputs of quantized Linear, Conv2d and Embedding layers within the scheme's error
bound of float64 references, loading quantized records (and the refusal into a float module, with nothing
half-loaded), and training a float head over quantized frozen weights."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import Device, Tensor, TensorData
from burn_backend.quantization import QuantizedData, QuantParam, QuantScheme, QuantStore, QuantValue
from burn_nn import (
    Calibration,
    Conv2dConfig,
    EmbeddingConfig,
    LinearConfig,
    Module,
    Quantizer,
    RecordError,
)
from burn_nn.optim import AdamConfig, GradientsParams

F64 = np.float64
Q8 = QuantScheme()
Q4_BLOCKS = QuantScheme().with_value(QuantValue.Q4S).with_block_size(16).with_store(QuantStore.PACKED_U32)


def _host(tensor: Tensor) -> np.ndarray:
    return tensor.dequantize().to_data().to_numpy().astype(F64)


@pytest.mark.parametrize("scheme", [Q8, Q4_BLOCKS], ids=str)
def test_min_max_weights_are_the_codec_round_trip(inner_device: Device, scheme: QuantScheme) -> None:
    layer = LinearConfig(32, 48).init(inner_device)
    quantized = layer.quantize_weights(Quantizer(Calibration.MinMax, scheme))
    for (path, param), (_, original) in zip(quantized.named_params(), layer.named_params()):
        assert param.val().quant_scheme == scheme, path
        assert param.quant_scheme == scheme
        assert not param.require_grad
        expected = QuantizedData.quantize(original.val().to_data(), scheme)
        assert param.val().quantized_data() == expected, path
        # the NumPy reference of min-max: max|x| of each block to the end of the value range
        x = original.val().to_data().to_numpy().astype(F64)
        top = scheme.value.range[1]
        blocks = x.reshape(-1, scheme.block_size) if scheme.block_size else x.reshape(1, -1)
        steps = np.abs(blocks).max(axis=1) / top
        error = np.abs(_host(param.val()).reshape(blocks.shape) - blocks)
        assert (error <= steps[:, None] / 2 + 1e-7).all(), path
    assert layer.weight.val().quant_scheme is None  # the original is unchanged


def test_percentile_clips_to_the_percentile_of_magnitudes(inner_device: Device) -> None:
    rng = np.random.default_rng(1)
    weights = rng.standard_normal((8, 64)).astype(np.float32)
    weights[0, 3] = 40.0  # an outlier
    layer = LinearConfig(8, 64, bias=False).init(inner_device).load_record({"weight": TensorData(weights)})
    scheme = QuantScheme().with_value(QuantValue.Q4S).with_block_size(32)
    quantized = layer.quantize_weights(Quantizer(Calibration.Percentile(90.0), scheme))
    data = quantized.weight.val().quantized_data()
    blocks = np.abs(weights.astype(F64)).reshape(8, 2, 32)
    expected = np.percentile(blocks, 90.0, axis=-1) / 7.0
    np.testing.assert_allclose(data.scales.astype(F64), expected, rtol=1e-6)
    # the outlier clips to the end of the range, everything else rounds to the nearest step
    restored = _host(quantized.weight.val())
    assert restored[0, 3] == pytest.approx(7.0 * expected[0, 0], rel=1e-6)
    inside = np.abs(weights) <= np.repeat(expected * 7.0, 32, axis=1)
    step = np.repeat(expected, 32, axis=1)
    assert (np.abs(restored - weights)[inside] <= step[inside] / 2 + 1e-6).all()
    with pytest.raises(ValueError, match=r"percentile must be in \(0, 100\]"):
        Calibration.Percentile(0.0)
    with pytest.raises(TypeError, match="expected a Quantizer"):
        layer.quantize_weights(Calibration.MinMax)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "scheme",
    [Q4_BLOCKS.with_param(QuantParam.F16), QuantScheme().with_value(QuantValue.Q4F).with_block_size(32), Q8],
    ids=str,
)
def test_min_error_keeps_the_shrink_of_least_squared_error(inner_device: Device, scheme: QuantScheme) -> None:
    rng = np.random.default_rng(2)
    weights = (rng.standard_normal((6, 64)) * rng.uniform(0.1, 2.0, (6, 1))).astype(np.float32)
    weights[1, 5] = 9.0  # an outlier
    layer = LinearConfig(6, 64, bias=False).init(inner_device).load_record({"weight": TensorData(weights)})
    quantized = layer.quantize_weights(Quantizer(Calibration.MinError, scheme))
    got = quantized.weight.val().quantized_data()
    # the NumPy reference: every shrink of the min-max scale, rounded in f32 and clipped, per block
    low, high = scheme.value.range
    size = scheme.block_size or weights.size
    blocks = weights.reshape(-1, size)
    top = np.abs(blocks).max(axis=1).astype(np.float32) / np.float32((high - low) / 2)
    top = top.astype(scheme.param.dtype.numpy).astype(F64)
    errors, candidates = [], []
    for factor in np.linspace(1.0, 0.7, 16):
        scales = (top * factor).astype(scheme.param.dtype.numpy).astype(np.float32)
        rounded = np.clip(np.round(blocks / scales[:, None]), low, high) * scales[:, None]
        errors.append(((rounded.astype(F64) - blocks) ** 2).sum(axis=1))
        candidates.append(scales)
    best = np.argmin(np.stack(errors), axis=0)
    expected = np.stack(candidates)[best, np.arange(len(best))]
    np.testing.assert_array_equal(got.scales.astype(np.float32).reshape(-1), expected)
    assert (np.stack(errors)[best, np.arange(len(best))] <= errors[0]).all()  # never worse than min-max
    assert (best > 0).any() or scheme.block_size is None  # some 4-bit blocks shrink
    assert repr(Calibration.MinError) == "Calibration.MinError"
    with pytest.raises(ValueError, match="a percentile and min_error exclude each other"):
        Calibration(99.0, min_error=True)


@pytest.mark.parametrize("scheme", [Q8, Q4_BLOCKS], ids=str)
def test_quantized_layers_run_within_the_error_bound(inner_device: Device, scheme: QuantScheme) -> None:
    rng = np.random.default_rng(2)
    linear = LinearConfig(64, 32).init(inner_device)
    conv = Conv2dConfig((3, 16), (3, 3)).init(inner_device)
    embedding = EmbeddingConfig(10, 16).init(inner_device)
    quantizer = Quantizer(Calibration.MinMax, scheme)
    x = rng.standard_normal((2, 5, 64)).astype(np.float32)
    q_linear = linear.quantize_weights(quantizer)
    out = q_linear(Tensor.from_data(x, inner_device)).to_data().to_numpy()
    # against the dequantized weights in float64: the kernels' own rounding only
    w, b = _host(q_linear.weight.val()), _host(q_linear.bias.val())
    np.testing.assert_allclose(out, x.astype(F64) @ w + b, rtol=1e-4, atol=1e-4)
    # against the float model: within sum |x| * step / 2 (+ the bias's half step)
    w0, b0 = (p.val().to_data().to_numpy().astype(F64) for p in (linear.weight, linear.bias))
    step_w = np.abs(w0).max() / scheme.value.range[1] if scheme.block_size is None else None
    error = np.abs(out - (x.astype(F64) @ w0 + b0))
    if step_w is not None:
        bound = np.abs(x).sum(axis=-1, keepdims=True) * step_w / 2 + np.abs(b0).max() / 127 / 2 + 1e-4
        assert (error <= bound).all()
    assert error.max() < 0.2 * np.abs(x.astype(F64) @ w0).max()
    images = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    q_conv = conv.quantize_weights(quantizer)
    ref = conv.load_record(q_conv.into_record(), dequantize=True)
    np.testing.assert_allclose(
        q_conv(Tensor.from_data(images, inner_device)).to_data().to_numpy(),
        ref(Tensor.from_data(images, inner_device)).to_data().to_numpy(),
        rtol=1e-5,
        atol=1e-5,
    )
    q_embedding = embedding.quantize_weights(quantizer)
    ids = Tensor.from_data(np.array([[1, 9, 0]]), inner_device)
    np.testing.assert_allclose(
        q_embedding(ids).to_data().to_numpy(), _host(q_embedding.weight.val())[[1, 9, 0]][None], rtol=1e-6
    )


def test_quantized_records_load_and_refuse_float_modules(inner_device: Device) -> None:
    layer = LinearConfig(32, 16).init(inner_device)
    quantized = layer.quantize_weights(Quantizer(Calibration.MinMax, Q4_BLOCKS))
    record = quantized.into_record()
    assert isinstance(record["weight"].value, QuantizedData)
    fresh = LinearConfig(32, 16).init(inner_device)
    before = fresh.weight.val().to_data().to_numpy().copy()
    with pytest.raises(RecordError, match=r"weight: record holds quantized q4s\[block 16.*dequantize=True"):
        fresh.load_record(record)
    np.testing.assert_array_equal(fresh.weight.val().to_data().to_numpy(), before)  # nothing half-loaded
    loaded = fresh.load_record(record, dequantize=True)
    np.testing.assert_array_equal(loaded.weight.val().to_data().to_numpy(), _host(quantized.weight.val()))
    assert loaded.weight.val().quant_scheme is None
    assert loaded.weight.id == quantized.weight.id
    # into a quantized module: the record's values and scheme, ids kept
    target = fresh.quantize_weights(Quantizer(Calibration.MinMax, Q8))
    back = target.load_record(record)
    assert back.weight.val().quantized_data() == quantized.weight.val().quantized_data()
    with pytest.raises(RecordError, match=r"record holds f32 values, module holds quantized q8s"):
        target.load_record(layer.into_record())


class _Model(Module):
    def __init__(self, device: Device) -> None:
        self.stem = LinearConfig(6, 8).init(device)
        self.body = LinearConfig(8, 8).init(device)
        self.head = LinearConfig(8, 2).init(device)

    def forward(self, x: Tensor) -> Tensor:
        return self.head(self.body(self.stem(x).tanh()).tanh())


def test_training_around_quantized_frozen_weights(device: Device) -> None:
    rng = np.random.default_rng(3)
    model = _Model(device)
    model.body = model.body.quantize_weights(Quantizer(Calibration.MinMax, Q8))
    body_values = model.body.weight.val().quantized_data()
    x = Tensor.from_data(rng.standard_normal((16, 6)).astype(np.float32), device)
    y = Tensor.from_data(rng.standard_normal((16, 2)).astype(np.float32), device)
    optim = AdamConfig().init()
    losses = []
    for _ in range(30):
        loss = (model(x) - y).square().mean()
        losses.append(float(loss.to_data().to_numpy().reshape(-1)[0]))
        grads = GradientsParams.from_grads(loss.backward(), model)
        got = {param.id for param in model.params() if grads.get(param.id) is not None}
        # the float layers below and above the quantized one get gradients, the quantized weights none
        assert got == {p.id for p in (*model.stem.params(), *model.head.params())}
        model = optim.step(1e-2, model, grads)
    assert losses[-1] < 0.8 * losses[0]
    assert model.body.weight.val().quantized_data() == body_values
