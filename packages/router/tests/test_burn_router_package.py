import importlib.metadata

import burn_router


def test_version_is_single_sourced() -> None:
    assert burn_router.__version__ == importlib.metadata.version("burn-router")
