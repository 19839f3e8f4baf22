import importlib.metadata

import burn_ndarray


def test_version_is_single_sourced() -> None:
    assert burn_ndarray.__version__ == importlib.metadata.version("burn-ndarray")
