"""No SciPy on Cuda's way: CuPy's operators between an array and a scalar go through NumPy's ufunc
dispatch, whose first call imports ``cupyx.scipy.sparse`` and SciPy with it (0.3 - 0.7 s where SciPy is
installed). burn-cuda and the shared array code call CuPy's functions instead; each test runs in a fresh
process (on a GPU)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from burn_cuda._cupy import unavailable_reason

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"needs an NVIDIA GPU through CuPy: {REASON}")

_REPORT = "import sys\nprint('cupyx.scipy.sparse' in sys.modules, 'scipy' in sys.modules)\n"


def _imports_of(script: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-c", script + _REPORT], capture_output=True, text=True, timeout=180
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()[-2:]


def test_random_draws_import_no_scipy() -> None:
    script = (
        "from burn_backend import Distribution, Tensor\n"
        "from burn_cuda import Cuda\n"
        "device = Cuda().device(0)\n"
        "for distribution in (Distribution.uniform(-1.0, 1.0), Distribution.normal(0.0, 2.0),\n"
        "                     Distribution.bernoulli(0.4)):\n"
        "    Tensor.random([4, 5], distribution, device).to_data()\n"
    )
    assert _imports_of(script) == ["False", "False"]


def test_training_steps_import_no_scipy() -> None:
    # op by op (the first calls of each chain), then fused: a linear layer, ReLU, dropout, a mean loss
    script = (
        "import numpy as np\n"
        "from burn_autodiff import Autodiff\n"
        "from burn_backend import Tensor\n"
        "from burn_cuda import Cuda\n"
        "from burn_fusion import Fusion\n"
        "from burn_nn import DropoutConfig, LinearConfig, Relu, loss\n"
        "from burn_nn.optim import AdamConfig, GradientsParams\n"
        "device = Autodiff(Fusion(Cuda())).device(0)\n"
        "layer, dropout, relu = LinearConfig(6, 3).init(device), DropoutConfig(0.5).init(), Relu()\n"
        "criterion, optim = loss.CrossEntropyLossConfig().init(device), AdamConfig().init()\n"
        "x = Tensor.from_data(np.ones((4, 6), np.float32), device)\n"
        "y = Tensor.from_data(np.array([0, 1, 2, 1]), device)\n"
        "for _ in range(4):\n"
        "    value = criterion(relu(dropout(layer(x))), y)\n"
        "    layer = optim.step(1e-3, layer, GradientsParams.from_grads(value.backward(), layer))\n"
        "    value.to_data()\n"
    )
    assert _imports_of(script) == ["False", "False"]
