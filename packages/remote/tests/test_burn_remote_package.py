import importlib.metadata

import burn_remote


def test_version_is_single_sourced() -> None:
    assert burn_remote.__version__ == importlib.metadata.version("burn-remote")
