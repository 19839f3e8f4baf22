"""cuDNN's plumbing that needs no GPU: plans built once per key and reused, a failure remembered and
logged once (the caller's kernels run instead), builds held back while a stream is captured, the
``cudnn=`` setting and ``BURN_CUDA_CUDNN``, and no cuDNN where its frontend is missing."""

from __future__ import annotations

import logging
import sys

import numpy as np
import pytest

from burn_cuda import Cuda
from burn_cuda._cudnn import _conv, _library
from burn_cuda._cudnn._plans import PlanCache, Unsupported


class Builder:
    """A plan builder that counts its calls and fails where told."""

    def __init__(self, error: Exception | None = None) -> None:
        self.calls = 0
        self.error = error

    def __call__(self) -> str:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return f"plan {self.calls}"


def test_a_key_builds_its_plan_once_and_runs_it_every_time() -> None:
    cache: PlanCache[str] = PlanCache("convolution")
    build = Builder()
    assert cache.run("a", build, lambda plan: plan + " ran") == "plan 1 ran"
    assert cache.run("a", build, lambda plan: plan + " ran") == "plan 1 ran"
    assert build.calls == 1
    assert cache.run("b", build, lambda plan: plan + " ran") == "plan 2 ran"
    assert (build.calls, cache.builds, len(cache)) == (2, 2, 2)


def test_a_refused_key_is_logged_once_and_never_built_again(caplog: pytest.LogCaptureFixture) -> None:
    cache: PlanCache[str] = PlanCache("convolution")
    build = Builder(Unsupported("no plan builds"))
    with caplog.at_level(logging.INFO, logger="burn_cuda.cudnn"):
        assert cache.run(("forward", (2, 3)), build, lambda plan: plan) is None
        assert cache.run(("forward", (2, 3)), build, lambda plan: plan) is None
    assert build.calls == 1
    (record,) = caplog.records
    assert record.levelno == logging.INFO  # a case cuDNN does not support is no fault
    assert "convolution ('forward', (2, 3))" in record.getMessage()
    assert "no plan builds" in record.getMessage()
    assert "own kernels run instead" in record.getMessage()


def test_a_failed_run_falls_back_with_a_warning_once(caplog: pytest.LogCaptureFixture) -> None:
    cache: PlanCache[str] = PlanCache("convolution")
    runs = []

    def execute(plan: str) -> str:
        runs.append(plan)
        raise RuntimeError("CUDNN_STATUS_EXECUTION_FAILED")

    with caplog.at_level(logging.INFO, logger="burn_cuda.cudnn"):
        assert cache.run("k", Builder(), execute) is None
        assert cache.run("k", Builder(), execute) is None
    assert runs == ["plan 1"]  # the key is not tried again
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "running failed: RuntimeError: CUDNN_STATUS_EXECUTION_FAILED" in record.getMessage()


def test_a_quiet_cache_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    cache: PlanCache[str] = PlanCache("convolution with its bias", quiet=True)
    with caplog.at_level(logging.DEBUG, logger="burn_cuda.cudnn"):
        assert cache.run("k", Builder(Unsupported("no fused engine")), lambda plan: plan) is None
    assert caplog.records == []


def test_no_build_while_a_stream_is_captured_and_no_failure_remembered() -> None:
    cache: PlanCache[str] = PlanCache("convolution")
    build = Builder()
    assert cache.run("k", build, lambda plan: plan, may_build=lambda: False) is None
    assert (build.calls, len(cache)) == (0, 0)
    assert cache.run("k", build, lambda plan: plan) == "plan 1"
    # once built, a plan runs while capturing too
    assert (
        cache.run("k", build, lambda plan: plan + " captured", may_build=lambda: False) == "plan 1 captured"
    )


def test_the_least_recently_used_keys_leave_past_the_capacity() -> None:
    cache: PlanCache[str] = PlanCache("convolution", capacity=2)
    build = Builder()
    for key in ("a", "b", "a", "c"):  # "b" is the least recently used when "c" comes
        cache.run(key, build, lambda plan: plan)
    assert build.calls == 3
    assert cache.run("a", build, lambda plan: plan) == "plan 1"
    assert cache.run("b", build, lambda plan: plan) == "plan 4"


def test_the_setting_and_the_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BURN_CUDA_CUDNN", raising=False)
    assert Cuda().use_cudnn
    assert not Cuda(cudnn=False).use_cudnn
    assert Cuda(cudnn=False) != Cuda()  # a setting of the backend, as its dtypes
    assert "cudnn=False" in repr(Cuda(cudnn=False))
    for off in ("0", "false", "OFF"):
        monkeypatch.setenv("BURN_CUDA_CUDNN", off)
        assert not Cuda().use_cudnn
        assert Cuda(cudnn=True).use_cudnn  # the argument wins
    monkeypatch.setenv("BURN_CUDA_CUDNN", "1")
    assert Cuda().use_cudnn


def test_without_the_frontend_the_convolutions_keep_their_kernels(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_library, "_module", None)
    monkeypatch.setattr(_library, "_error", None)
    monkeypatch.setitem(sys.modules, "cudnn", None)  # an import of it fails
    x = np.ones((2, 3, 8, 8), dtype=np.float32)
    w = np.ones((4, 3, 3, 3), dtype=np.float32)
    with caplog.at_level(logging.INFO, logger="burn_cuda.cudnn"):
        assert _conv.convolve(x, w, None, (1, 1), (0, 0), (1, 1), (6, 6)) is None
        assert (
            _conv.convolve_weight_grad(
                x, np.ones((2, 4, 6, 6), np.float32), (3, 3), (1,) * 2, (0,) * 2, (1,) * 2, 1
            )
            is None
        )
    (record,) = caplog.records  # once per process, not per call
    assert "frontend cannot be loaded" in record.getMessage()
    assert "burn-cuda[cudnn13]" in record.getMessage()
    assert "ModuleNotFoundError" in (_library.unavailable_reason() or "")


def test_dtypes_and_empty_operands_cudnn_does_not_serve_are_left_alone_unlogged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    x = np.ones((2, 3, 8, 8), dtype=np.float64)
    w = np.ones((4, 3, 3, 3), dtype=np.float64)
    with caplog.at_level(logging.DEBUG, logger="burn_cuda.cudnn"):
        assert _conv.convolve(x, w, None, (1, 1), (0, 0), (1, 1), (6, 6)) is None  # f64
        empty = np.ones((0, 3, 8, 8), dtype=np.float32)
        assert _conv.convolve(empty, w.astype(np.float32), None, (1, 1), (0, 0), (1, 1), (6, 6)) is None
    assert [r for r in caplog.records if "is not used for" in r.getMessage()] == []
