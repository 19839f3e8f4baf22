"""Cuda's random draws (``CupyRuntime.sample``): the shared code's values, bit for bit, with CuPy's own
ufuncs for the arithmetic and one kernel for a Bernoulli mask (on a GPU). The conformance suite checks
``random`` itself on every Cuda stack."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import Distribution
from burn_cuda._cupy import cp, unavailable_reason

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")

DISTRIBUTIONS = [
    Distribution.bernoulli(0.0),
    Distribution.bernoulli(0.3),
    Distribution.bernoulli(0.5),
    Distribution.bernoulli(1.0),
    Distribution.uniform(-2.0, 3.0),
    Distribution.normal(1.5, 0.25),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("distribution", DISTRIBUTIONS, ids=repr)
def test_draws_are_the_shared_codes(dtype: Any, distribution: Distribution) -> None:
    from burn_backend.array import ArrayRuntime
    from burn_cuda._runtime import CupyRuntime

    runtime = CupyRuntime()
    drawn = runtime.sample(runtime.generator(7), (33, 65), distribution, np.dtype(dtype))
    shared = ArrayRuntime.sample(runtime, runtime.generator(7), (33, 65), distribution, np.dtype(dtype))
    assert drawn.dtype == dtype
    assert drawn.shape == (33, 65)
    np.testing.assert_array_equal(cp.asnumpy(drawn), cp.asnumpy(shared))
    values = cp.asnumpy(drawn).astype(np.float64)
    if distribution.kind == "bernoulli":
        probability = distribution.probability
        assert set(np.unique(values)) <= {0.0, 1.0}
        if 0.0 < probability < 1.0:
            assert abs(values.mean() - probability) < 0.05  # 2,145 draws: about 5 standard deviations
        else:
            assert values.mean() == probability
    elif distribution.kind == "uniform":
        assert values.min() >= -2.0
        assert values.max() <= 3.0
        assert abs(values.mean() - 0.5) < 0.2
    else:
        assert abs(values.mean() - 1.5) < 0.03
        assert abs(values.std() - 0.25) < 0.03
