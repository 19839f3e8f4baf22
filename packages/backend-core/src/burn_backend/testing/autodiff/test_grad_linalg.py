"""Gradients of ``burn_backend.linalg`` (composed from tensor ops) and of the composed ``signal``
transforms (``cfft``, ``icfft``, ``stft``, ``istft``) and ``module.pad``: against finite differences in
float64 and ``torch.autograd``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, linalg, module, signal
from burn_backend.testing.autodiff._gradcheck import gradcheck

Array = np.ndarray[Any, Any]


def torch_module() -> Any:
    return pytest.importorskip("torch")


# -- linalg ----------------------------------------------------------------------------------------------
def test_linalg_det_gradient(ad_device: Device, rng: np.random.Generator) -> None:
    gradcheck(
        ad_device,
        linalg.det,
        [rng.uniform(-1.0, 1.0, (2, 4, 4))],
        rng,
        torch_function=lambda a: torch_module().linalg.det(a),
    )


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)], ids=str)
@pytest.mark.parametrize("part", [1, 2], ids=["L", "U"])
def test_linalg_lu_gradient(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], part: int
) -> None:
    gradcheck(
        ad_device,
        lambda a: linalg.lu(a)[part],
        [rng.uniform(-1.0, 1.0, shape)],
        rng,
        torch_function=lambda a: torch_module().linalg.lu(a)[part],
    )


@pytest.mark.parametrize("shape", [(2, 4, 4), (5, 3)], ids=str)
@pytest.mark.parametrize("part", [0, 1], ids=["Q", "R"])
def test_linalg_qr_gradient(
    ad_device: Device, rng: np.random.Generator, shape: tuple[int, ...], part: int
) -> None:
    gradcheck(
        ad_device,
        lambda a: linalg.qr(a)[part],
        [rng.uniform(-1.0, 1.0, shape)],
        rng,
        torch_function=lambda a: torch_module().linalg.qr(a)[part],
    )


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf"), float("-inf")], ids=str)
def test_linalg_vector_norm_gradient(ad_device: Device, rng: np.random.Generator, p: float) -> None:
    gradcheck(
        ad_device,
        lambda a: linalg.vector_norm(a, p, 1),
        [rng.uniform(-1.0, 1.0, (3, 5))],
        rng,
        torch_function=lambda a: torch_module().linalg.vector_norm(a, p, 1, keepdim=True),
    )


def test_linalg_vector_norm_gradient_at_zero_is_zero(ad_device: Device) -> None:
    x = Tensor.zeros([2, 3], ad_device, DType.F64).require_grad()
    grad = x.grad(linalg.vector_norm(x, 2.0, (0, 1)).sum().backward())
    assert grad is not None
    np.testing.assert_array_equal(grad.to_numpy(), np.zeros((2, 3)))


def test_linalg_products_and_similarity_gradients(ad_device: Device, rng: np.random.Generator) -> None:
    a, b = rng.uniform(-1.0, 1.0, (3, 4)), rng.uniform(-1.0, 1.0, (3, 4))
    gradcheck(
        ad_device,
        lambda x, y: linalg.cosine_similarity(x, y, 1),
        [a, b],
        rng,
        torch_function=lambda x, y: torch_module().nn.functional.cosine_similarity(x, y, 1).unsqueeze(1),
    )
    gradcheck(ad_device, linalg.outer, [a, b], rng)
    gradcheck(ad_device, linalg.matvec, [rng.uniform(-1.0, 1.0, (2, 3, 4)), a[0]], rng)
    gradcheck(ad_device, linalg.trace, [rng.uniform(-1.0, 1.0, (2, 3, 4))], rng)


# -- signal ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("inverse", [False, True], ids=["cfft", "icfft"])
@pytest.mark.parametrize("part", [0, 1], ids=["re", "im"])
def test_signal_cfft_gradient(ad_device: Device, rng: np.random.Generator, inverse: bool, part: int) -> None:
    def torch_function(re: Any, im: Any) -> Any:
        torch = torch_module()
        out = (torch.fft.ifft if inverse else torch.fft.fft)(torch.complex(re, im), dim=-1)
        return out.imag if part else out.real

    transform = signal.icfft if inverse else signal.cfft
    inputs = [rng.uniform(-1.0, 1.0, (2, 7)), rng.uniform(-1.0, 1.0, (2, 7))]
    gradcheck(ad_device, lambda re, im: transform(re, im)[part], inputs, rng, torch_function=torch_function)


@pytest.mark.parametrize("part", [0, 1], ids=["re", "im"])
def test_signal_stft_gradient(ad_device: Device, rng: np.random.Generator, part: int) -> None:
    window = rng.uniform(0.5, 1.0, 8)

    def function(x: Tensor) -> Tensor:
        w = Tensor.from_data(window, x.device, DType.F64)
        return signal.stft(x, 8, 3, window=w)[part]

    def torch_function(x: Any) -> Any:
        torch = torch_module()
        out = torch.stft(x, 8, 3, window=torch.tensor(window), return_complex=True)
        return out.imag if part else out.real

    gradcheck(ad_device, function, [rng.uniform(-1.0, 1.0, (2, 20))], rng, torch_function=torch_function)


def test_signal_istft_gradient(ad_device: Device, rng: np.random.Generator) -> None:
    window = rng.uniform(0.5, 1.0, 8)

    def function(re: Tensor, im: Tensor) -> Tensor:
        return signal.istft(re, im, 8, 2, window=Tensor.from_data(window, re.device, DType.F64), length=14)

    def torch_function(re: Any, im: Any) -> Any:
        torch = torch_module()
        return torch.istft(torch.complex(re, im), 8, 2, window=torch.tensor(window), length=14)

    inputs = [rng.uniform(-1.0, 1.0, (5, 8)), rng.uniform(-1.0, 1.0, (5, 8))]
    gradcheck(ad_device, function, inputs, rng, torch_function=torch_function)


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_module_pad_gradient(ad_device: Device, rng: np.random.Generator, mode: str) -> None:
    gradcheck(
        ad_device,
        lambda x: module.pad(x, (2, 1, 1, 2), mode),
        [rng.uniform(-1.0, 1.0, (1, 2, 3, 4))],
        rng,
        torch_function=lambda x: torch_module().nn.functional.pad(x, (2, 1, 1, 2), mode),
    )
