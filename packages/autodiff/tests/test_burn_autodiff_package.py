import importlib.metadata

import burn_autodiff


def test_version_is_single_sourced() -> None:
    assert burn_autodiff.__version__ == importlib.metadata.version("burn-autodiff")
