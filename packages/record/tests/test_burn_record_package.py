import importlib.metadata

import burn_record


def test_version_is_single_sourced() -> None:
    assert burn_record.__version__ == importlib.metadata.version("burn-record")
