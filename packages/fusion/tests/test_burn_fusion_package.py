import importlib.metadata

import burn_fusion


def test_version_is_single_sourced() -> None:
    assert burn_fusion.__version__ == importlib.metadata.version("burn-fusion")
