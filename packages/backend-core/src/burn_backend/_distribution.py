"""``Distribution``: what random tensors are drawn from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Distribution:
    """A distribution for ``Tensor.random``: Default (uniform on [0, 1)), Bernoulli, Uniform or Normal.

    Build one with the class methods:

    Example:
        >>> Distribution.normal(0.0, 2.0)
        Distribution.normal(mean=0.0, std=2.0)
    """

    kind: Literal["default", "bernoulli", "uniform", "normal"]
    a: float = 0.0
    b: float = 1.0

    @classmethod
    def default(cls) -> Distribution:
        """Uniform on [0, 1)."""
        return cls("default")

    @classmethod
    def bernoulli(cls, probability: float) -> Distribution:
        """1 with ``probability``, else 0."""
        if not 0.0 <= probability <= 1.0:
            raise ValueError(f"Distribution.bernoulli: probability {probability} is outside [0, 1]")
        return cls("bernoulli", float(probability))

    @classmethod
    def uniform(cls, low: float, high: float) -> Distribution:
        """Uniform on [low, high)."""
        if not low < high:
            raise ValueError(f"Distribution.uniform: low {low} must be below high {high}")
        return cls("uniform", float(low), float(high))

    @classmethod
    def normal(cls, mean: float, std: float) -> Distribution:
        """Normal with ``mean`` and standard deviation ``std``."""
        if not std >= 0:
            raise ValueError(f"Distribution.normal: std {std} must be non-negative")
        return cls("normal", float(mean), float(std))

    @property
    def probability(self) -> float:
        """Bernoulli's probability of 1."""
        return self.a

    @property
    def low(self) -> float:
        """The lower bound of a uniform distribution."""
        return self.a

    @property
    def high(self) -> float:
        """The upper bound of a uniform distribution."""
        return self.b

    @property
    def mean(self) -> float:
        """The mean of a normal distribution."""
        return self.a

    @property
    def std(self) -> float:
        """The standard deviation of a normal distribution."""
        return self.b

    def __repr__(self) -> str:
        if self.kind == "default":
            return "Distribution.default()"
        if self.kind == "bernoulli":
            return f"Distribution.bernoulli({self.a})"
        if self.kind == "uniform":
            return f"Distribution.uniform({self.a}, {self.b})"
        return f"Distribution.normal(mean={self.a}, std={self.b})"
