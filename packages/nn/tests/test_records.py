"""Records beyond parameters: random generators, partial loading, values that do not fit a dtype."""

from __future__ import annotations

import numpy as np
import pytest

from burn_backend import ParamRecord, Tensor, TensorData
from burn_ndarray import NdArray
from burn_nn import DropoutConfig, LinearConfig, RecordError, load_rng_record, rng_record


def test_a_device_generator_record_repeats_what_it_draws(device) -> None:
    x = Tensor.ones([32], device=device)
    dropout = DropoutConfig(0.5).init()
    state = rng_record(device)  # through Autodiff, the inner NdArray's generator
    first = dropout(x).to_data().to_numpy()
    device.seed(7)
    load_rng_record(device, state)
    np.testing.assert_array_equal(dropout(x).to_data().to_numpy(), first)


def test_numpy_generator_records_are_plain_data() -> None:
    generator = np.random.Generator(np.random.MT19937(3))
    state = rng_record(generator)
    assert state["bit_generator"] == "MT19937"
    assert isinstance(state["state"]["key"], list)  # no arrays: any recorder stores it
    expected = generator.random(3)
    other = np.random.Generator(np.random.MT19937(0))
    load_rng_record(other, state)
    np.testing.assert_array_equal(other.random(3), expected)
    with pytest.raises(ValueError, match="the record holds a 'MT19937' state, the generator is 'PCG64'"):
        load_rng_record(np.random.default_rng(), state)
    with pytest.raises(ValueError, match="not a valid MT19937 state"):
        load_rng_record(other, {"bit_generator": "MT19937", "state": "broken"})
    with pytest.raises(TypeError, match="has no NumPy bit_generator state"):
        rng_record("seed")  # type: ignore[arg-type]


def test_partial_loads_list_missing_and_unused_entries(device) -> None:
    layer = LinearConfig(3, 2).init(device)
    record = {"weight": layer.into_record()["weight"], "extra": TensorData([1.0])}
    result = LinearConfig(3, 2).init(device).load_record_partial(record)
    assert (result.missing, result.unused) == (["bias"], ["extra"])
    assert result.module.weight.id == layer.weight.id
    with pytest.raises(RecordError) as error:
        LinearConfig(3, 2).init(device).load_record(record)
    assert (error.value.missing, error.value.unused) == (["bias"], ["extra"])


def test_values_that_do_not_fit_the_modules_dtype_are_mismatches() -> None:
    layer = LinearConfig(2, 1).init(NdArray(float_dtype="f16").device())
    record = layer.into_record()
    record["weight"] = ParamRecord(record["weight"].id, TensorData(np.array([[1.0], [1e5]], np.float32)))
    with pytest.raises(RecordError) as error:
        layer.load_record(record)
    assert error.value.mismatched == [
        "weight: record value 100000.0 at index [1, 0] (f32) does not fit the module's f16"
    ]
    record["weight"] = ParamRecord(record["weight"].id, TensorData(np.array([[np.inf], [-2.5]], np.float64)))
    loaded = layer.load_record(record)  # infinities are values, not overflows
    np.testing.assert_array_equal(loaded.weight.val().to_data().to_numpy(), [[np.inf], [-2.5]])


def test_a_cuda_generator_record_repeats_what_it_draws() -> None:
    """CuPy's cuRAND generator: its device states are recorded as bytes (through a recorder too), and
    loading them repeats the draws; a record of another size is refused."""
    burn_cuda = pytest.importorskip("burn_cuda")
    from burn_cuda._cupy import unavailable_reason

    if unavailable_reason() is not None:
        pytest.skip(f"needs an NVIDIA GPU through CuPy: {unavailable_reason()}")
    device = burn_cuda.Cuda().device(0)
    device.seed(3)

    def draw() -> np.ndarray:
        return Tensor.random([4096], device=device).to_data().to_numpy()

    draw()  # the generator has moved on from its seed
    state = rng_record(device)
    assert state["bit_generator"].startswith("cupy.")
    assert state["state"].dtype == np.uint8
    first, second = draw(), draw()
    assert not np.array_equal(first, second)
    recorder = pytest.importorskip("burn_record").NamedMpkBytesRecorder()
    state = recorder.load(recorder.save({"rng": state}))["rng"]
    device.seed(11)
    load_rng_record(device, state)
    np.testing.assert_array_equal(draw(), first)
    np.testing.assert_array_equal(draw(), second)
    short = {"bit_generator": state["bit_generator"], "state": np.zeros(16, np.uint8)}
    with pytest.raises(ValueError, match="another number of multiprocessors"):
        load_rng_record(device, short)
    with pytest.raises(ValueError, match="the generator is 'cupy"):
        load_rng_record(device, rng_record(np.random.default_rng(0)))
