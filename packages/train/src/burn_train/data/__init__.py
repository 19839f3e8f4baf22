"""Datasets, transforms, batchers and the data loader."""

__all__: list[str] = []
