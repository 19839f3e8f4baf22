import importlib.metadata

import burn_import


def test_version_is_single_sourced() -> None:
    assert burn_import.__version__ == importlib.metadata.version("burn-import")
