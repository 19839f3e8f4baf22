"""Optimizers, gradient utilities and learning-rate schedulers."""

__all__: list[str] = []
