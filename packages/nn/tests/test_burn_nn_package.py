import importlib.metadata

import burn_nn


def test_version_is_single_sourced() -> None:
    assert burn_nn.__version__ == importlib.metadata.version("burn-nn")
