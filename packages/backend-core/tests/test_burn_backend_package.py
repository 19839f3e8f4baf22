import importlib.metadata

import burn_backend


def test_version_is_single_sourced() -> None:
    assert burn_backend.__version__ == importlib.metadata.version("burn-backend-core")
