"""Backend-core's own defaults pass the conformance suite.

``CoreDefaults`` is NdArray with every default method it overrides taken back, so that the suite runs
backend-core's implementation of them on top of NdArray's required ops. The suite runs on it here for
the defaults that once failed it: ``float_hypot`` (overflow), the int defaults on unsigned dtypes and at
the int extremes (``int_powi`` computed in f64), and the module and activation defaults on f16 and bf16
(which compute in f32 and round once).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from burn_backend import Backend, DType, Tensor
from burn_backend.kit import ELEMENTWISE_OPS
from burn_backend.testing import interface_methods
from burn_ndarray import NdArray

MODULE = Path(__file__).stem
RunKit = Callable[..., Any]  # the ``run_kit`` fixture: arguments of pytest -> a ``KitRun``

TAKEN_BACK = {
    name: getattr(Backend, name)
    for name in interface_methods()
    if name not in Backend.__abstractmethods__ and getattr(NdArray, name) is not getattr(Backend, name)
}
CoreDefaults = type("CoreDefaults", (NdArray,), {**TAKEN_BACK, "__module__": __name__})


def test_core_defaults_runs_backend_core_defaults() -> None:
    assert {
        "float_hypot",
        "float_grid_sample_2d",
        "interpolate",
        "rfft",
        "fold4d",
        "softmax",
    } <= TAKEN_BACK.keys()
    for name in TAKEN_BACK:
        assert getattr(CoreDefaults, name) is getattr(Backend, name)


def test_hypot_neither_overflows_nor_underflows() -> None:
    device = CoreDefaults().device(0)
    a = Tensor.from_data([1e308, 3e-300, 0.0, np.inf, np.nan, np.nan, -3.0], device, DType.F64)
    b = Tensor.from_data([1e308, 4e-300, 0.0, np.nan, np.inf, 1.0, 4.0], device, DType.F64)
    expected = np.hypot(a.to_data().to_numpy(), b.to_data().to_numpy())
    np.testing.assert_allclose(a.hypot(b).to_data().to_numpy(), expected, rtol=1e-15)


@pytest.mark.parametrize("dtype", [DType.I64, DType.I32, DType.I8, DType.U64, DType.U8], ids=str)
def test_the_int_powi_default_is_exact_at_the_extremes(dtype: DType) -> None:
    # it computed in f64: 2**63 - 1 to the power 1 gave the cast of 2.0**63, a u8's 255 ** 1 gave 0
    info = np.iinfo(dtype.numpy)
    bases = [
        v for v in (0, 1, -1, 2, -7, 3, int(info.min), int(info.max) - 1, int(info.max)) if v >= info.min
    ]
    exponents = [0, 1, 2, 3, 5, 31, 62, 63, 64, 127] if dtype.is_signed else [0, 1, 2, 3, 5, 63, 64, 255]
    bits = np.dtype(dtype.numpy).itemsize * 8
    expected = [[pow(b, e, 2**bits) for e in exponents] for b in bases]  # modulo 2**bits: as stored
    if dtype.is_signed:
        expected = [[v - 2**bits if v >= 2 ** (bits - 1) else v for v in row] for row in expected]
    backend = CoreDefaults()
    lhs = Tensor.from_data(np.array(bases, dtype.numpy).reshape(-1, 1), backend.device(0), dtype)
    rhs = Tensor.from_data(np.array(exponents, dtype.numpy).reshape(1, -1), backend.device(0), dtype)
    result = backend.int_powi(lhs.primitive, rhs.primitive)
    assert np.asarray(backend.int_into_data(result).to_numpy()).tolist() == expected


@pytest.mark.parametrize(("dtype", "tolerance"), [(DType.F64, 1e-12), (DType.F32, 2e-5)], ids=str)
def test_the_erfinv_default_inverts_erf(dtype: DType, tolerance: float) -> None:
    """Three Newton steps from Winitzki's approximation, in the tensor's dtype: to its precision up to
    |y| = 0.999 (the table's reference: Newton's method on ``math.erf`` and ``math.erfc`` in f64)."""
    device = CoreDefaults().device(0)
    y = np.linspace(-0.999, 0.999, 2001)
    got = Tensor.from_data(y, device, dtype).erfinv().to_data().to_numpy().astype(np.float64)
    reference = ELEMENTWISE_OPS["float_erfinv"].reference(y.astype(dtype.numpy).astype(np.float64))
    np.testing.assert_allclose(got, reference, rtol=tolerance, atol=tolerance)
    edges = Tensor.from_data([1.0, -1.0, 2.0, np.nan, 0.0], device, dtype).erfinv().to_data().to_numpy()
    np.testing.assert_array_equal(edges, np.array([np.inf, -np.inf, np.nan, np.nan, 0.0]))


@pytest.mark.slow
def test_the_suite_passes_on_backend_core_defaults(run_kit: RunKit) -> None:
    tests = [
        "float.test_math::test_ieee_specials_propagate_silently",
        "core.test_elementwise_table::test_backend_computes_the_reference_at_special_values",
        "core.test_elementwise_table::test_implementation_defined_special_values",
        "float.test_arithmetic::test_hypot",
        "int.test_arithmetic::test_scalar",
        "activation.test_activation_functions",
        "module.test_grid_sample",
        "module.test_deform_conv",
        "module.test_interpolate",
        "module.test_pool",
        "module.test_fft",
        "module.test_fold",
    ]
    run = run_kit(
        "--pyargs",
        *(f"burn_backend.testing.{test}" for test in tests),
        "--backend",
        f"{MODULE}:CoreDefaults()",
    )
    assert run.returncode == 0, run.output[-5000:]
