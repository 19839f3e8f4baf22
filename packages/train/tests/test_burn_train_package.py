import importlib.metadata

import burn_train


def test_version_is_single_sourced() -> None:
    assert burn_train.__version__ == importlib.metadata.version("burn-train")
