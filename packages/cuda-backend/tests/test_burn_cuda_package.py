import importlib.metadata

import burn_cuda
from burn_backend.kit import ENTRY_POINT_GROUP


def test_version_is_single_sourced() -> None:
    assert burn_cuda.__version__ == importlib.metadata.version("burn-cuda")


def test_the_backend_is_announced_as_cuda() -> None:
    (entry,) = [e for e in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP) if e.name == "cuda"]
    assert entry.value == "burn_cuda:Cuda"
    assert entry.load() is burn_cuda.Cuda
