"""What a backend author reads and calls outside the conformance suite: the README's count of required
methods and the zero-copy ``TensorData.from_numpy``."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from burn_backend import Backend, TensorData

README = Path(__file__).parents[1] / "README.md"


def test_the_readme_counts_the_required_methods() -> None:
    stated = re.search(r"(\d+) required methods in all, (\d+) ops and those three", README.read_text())
    assert stated is not None, "the README no longer states how many methods a backend implements"
    required = Backend.__abstractmethods__
    assert {"device_count", "seed", "sync"} <= required
    assert (int(stated.group(1)), int(stated.group(2))) == (len(required), len(required) - 3)


def test_from_numpy_without_copy_shares_the_array_read_only() -> None:
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    data = TensorData.from_numpy(array, copy=False)
    assert np.shares_memory(data.to_numpy(), array)
    assert not data.to_numpy().flags.writeable
    assert array.flags.writeable  # the backend's own array keeps its flags
    assert list(data.shape) == [2, 3]
    assert data.tolist() == array.tolist()


def test_from_numpy_copies_by_default_and_where_the_array_is_not_contiguous() -> None:
    array = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert not np.shares_memory(TensorData.from_numpy(array).to_numpy(), array)
    strided = TensorData.from_numpy(array[:, ::2], copy=False)
    assert strided.to_numpy().flags.c_contiguous
    assert strided.tolist() == [[0, 2], [3, 5]]


@pytest.mark.parametrize("copy", [True, False])
def test_from_numpy_rejects_a_dtype_tensor_data_cannot_hold(copy: bool) -> None:
    with pytest.raises(TypeError, match="not a supported dtype"):
        TensorData.from_numpy(np.zeros(2, dtype=np.complex64), copy=copy)
