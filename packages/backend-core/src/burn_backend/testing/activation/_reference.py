"""Reference activations in NumPy extended precision (``np.longdouble``, float64 at least).

Written from the definitions, independently of the implementations under test; stable formulas
(``logaddexp``, ``erfc``, ``expm1`` on the negative part) so that nothing overflows, whatever the
platform's ``longdouble`` is.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

Array = Any
L = np.longdouble

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def wide(x: Array) -> Array:
    return np.asarray(x, dtype=np.float64).astype(L)


def _erfc(x: Array) -> Array:
    return np.vectorize(math.erfc, otypes=[np.float64])(np.asarray(x, dtype=np.float64)).astype(L)


def normal_cdf(x: Array) -> Array:
    # erfc keeps the digits of the lower tail, where 1 + erf would cancel
    return L(0.5) * _erfc(-wide(x) / np.sqrt(L(2)))


def normal_pdf(x: Array) -> Array:
    x = wide(x)
    return np.exp(-x * x / 2) / np.sqrt(2 * L(np.pi))


def relu(x: Array) -> Array:
    x = wide(x)
    return np.where(x > 0, x, L(0))


def leaky_relu(x: Array, slope: float) -> Array:
    x = wide(x)
    return np.where(x >= 0, x, x * L(slope))


def prelu(x: Array, alpha: Array) -> Array:
    x = wide(x)
    return np.where(x >= 0, x, x * wide(alpha))


def gelu(x: Array) -> Array:
    return wide(x) * normal_cdf(x)


def gelu_derivative(x: Array) -> Array:
    return normal_cdf(x) + wide(x) * normal_pdf(x)


def gelu_tanh(x: Array) -> Array:
    x = wide(x)
    inner = np.sqrt(L(2) / L(np.pi)) * (x + L(0.044715) * x**3)
    return x / 2 * (1 + np.tanh(inner))


def log_sigmoid(x: Array) -> Array:
    return -np.logaddexp(L(0), -wide(x))


def sigmoid(x: Array) -> Array:
    return np.exp(log_sigmoid(x))


def hard_sigmoid(x: Array, alpha: float, beta: float) -> Array:
    return np.clip(wide(x) * L(alpha) + L(beta), L(0), L(1))


def softplus(x: Array, beta: float = 1.0, threshold: float = 20.0) -> Array:
    x = wide(x)
    scaled = x * L(beta)
    return np.where(scaled > threshold, x, np.logaddexp(L(0), scaled) / L(beta))


def logsumexp(x: Array, dim: int) -> Array:
    x = wide(x)
    top = np.max(x, axis=dim, keepdims=True)
    return top + np.log(np.sum(np.exp(x - top), axis=dim, keepdims=True))


def log_softmax(x: Array, dim: int) -> Array:
    return wide(x) - logsumexp(x, dim)


def softmax(x: Array, dim: int) -> Array:
    return np.exp(log_softmax(x, dim))


def softmin(x: Array, dim: int) -> Array:
    return softmax(-wide(x), dim)


def quiet_softmax(x: Array, dim: int) -> Array:
    # exp(x) / (1 + sum exp(x)) = exp(x - log(exp(0) + exp(logsumexp(x))))
    return np.exp(wide(x) - np.logaddexp(L(0), logsumexp(x, dim)))


def expm1_negative(x: Array) -> Array:
    return np.expm1(np.minimum(wide(x), L(0)))


def elu(x: Array, alpha: float = 1.0) -> Array:
    x = wide(x)
    return np.where(x > 0, x, L(alpha) * expm1_negative(x))


def selu(x: Array) -> Array:
    return L(SELU_SCALE) * elu(x, SELU_ALPHA)


def celu(x: Array, alpha: float = 1.0) -> Array:
    x = wide(x)
    return np.where(x > 0, x, L(alpha) * expm1_negative(x / L(alpha)))


def mish(x: Array) -> Array:
    return wide(x) * np.tanh(np.logaddexp(L(0), wide(x)))


def silu(x: Array) -> Array:
    return wide(x) * sigmoid(x)


def hard_swish(x: Array) -> Array:
    x = wide(x)
    return x * np.clip(x + 3, L(0), L(6)) / 6


def relu6(x: Array) -> Array:
    return np.clip(wide(x), L(0), L(6))


def softsign(x: Array) -> Array:
    x = wide(x)
    return x / (1 + np.abs(x))


def tanh(x: Array) -> Array:
    return np.tanh(wide(x))


def tanhshrink(x: Array) -> Array:
    x = wide(x)
    return x - np.tanh(x)


def hardtanh(x: Array, low: float = -1.0, high: float = 1.0) -> Array:
    return np.clip(wide(x), L(low), L(high))


def threshold(x: Array, limit: float, value: float) -> Array:
    x = wide(x)
    return np.where(x > limit, x, L(value))


def thresholded_relu(x: Array, alpha: float = 1.0) -> Array:
    x = wide(x)
    return np.where(x > alpha, x, L(0))


def shrink(x: Array, lambd: float = 0.5, bias: float = 0.0) -> Array:
    x = wide(x)
    return np.where(x < -lambd, x + L(bias), np.where(x > lambd, x - L(bias), L(0)))


def hard_shrink(x: Array, lambd: float = 0.5) -> Array:
    x = wide(x)
    return np.where(np.abs(x) > lambd, x, L(0))


def soft_shrink(x: Array, lambd: float = 0.5) -> Array:
    return shrink(x, lambd, lambd)


def halves(x: Array, dim: int) -> tuple[Array, Array]:
    x = wide(x)
    first, second = np.split(x, 2, axis=dim)
    return first, second


def glu(x: Array, dim: int) -> Array:
    first, second = halves(x, dim)
    return first * sigmoid(second)


def swiglu(x: Array, dim: int) -> Array:
    first, second = halves(x, dim)
    return first * silu(second)
