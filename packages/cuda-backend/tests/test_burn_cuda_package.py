import importlib.metadata

import burn_cuda


def test_version_is_single_sourced() -> None:
    assert burn_cuda.__version__ == importlib.metadata.version("burn-cuda")
