"""Learning-rate schedulers: their sequences against ``torch.optim.lr_scheduler`` (mind the convention:
our ``step()`` returns the rate of the coming iteration, PyTorch's optimizer holds it before its
``scheduler.step()``), records that resume a run, and config errors."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from typing import Any

import pytest

from burn_nn import ConfigError
from burn_nn.optim import (
    ComposedLrScheduler,
    ComposedLrSchedulerConfig,
    ConstantLr,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    LrScheduler,
    LrSchedulerConfig,
    NoamLrSchedulerConfig,
    SchedulerReduction,
    SequentialLrScheduler,
    SequentialLrSchedulerConfig,
    StepLrSchedulerConfig,
)


def steps(scheduler: LrScheduler, count: int) -> list[float]:
    return [scheduler.step() for _ in range(count)]


def torch_lrs(ref: Any, make: Callable[[Any], Any], count: int, base_lr: float = 1.0) -> list[float]:
    """The rate of each of ``count`` iterations under a PyTorch scheduler: what the optimizer holds
    while the iteration runs, before ``scheduler.step()`` at its end."""
    torch = ref.torch
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=base_lr)
    scheduler = make(optimizer)
    rates = []
    for _ in range(count):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return rates


def assert_rates(ours: list[float], expected: list[float]) -> None:
    assert len(ours) == len(expected)
    for index, (a, b) in enumerate(zip(ours, expected)):
        assert a == pytest.approx(b, rel=1e-10, abs=1e-15), f"step {index}: {a} != {b}"


# -- sequences against PyTorch -----------------------------------------------------------------------
@pytest.mark.parametrize(("initial", "final", "num_iters"), [(0.9, 0.5, 4), (0.01, 0.04, 3), (1.0, 0.0, 7)])
def test_linear_matches_torch_linear_lr(ref: Any, initial: float, final: float, num_iters: int) -> None:
    ours = steps(LinearLrSchedulerConfig(initial, final, num_iters).init(), num_iters + 4)
    lr_scheduler = ref.torch.optim.lr_scheduler
    expected = torch_lrs(
        ref,
        lambda opt: lr_scheduler.LinearLR(opt, start_factor=initial, end_factor=final, total_iters=num_iters),
        num_iters + 4,
    )
    assert_rates(ours, expected)
    assert ours[0] == pytest.approx(initial)
    assert ours[-1] == final


@pytest.mark.parametrize(("initial", "num_iters", "min_lr"), [(0.5, 2, 0.1), (1.0, 7, 0.0), (0.3, 5, 0.01)])
def test_cosine_cycles_match_torch_cosine_annealing_lr(
    ref: Any, initial: float, num_iters: int, min_lr: float
) -> None:
    cycle = num_iters + 1
    ours = steps(CosineAnnealingLrSchedulerConfig(initial, num_iters, min_lr).init(), 3 * cycle)
    lr_scheduler = ref.torch.optim.lr_scheduler
    one_cycle = torch_lrs(
        ref, lambda opt: lr_scheduler.CosineAnnealingLR(opt, T_max=num_iters, eta_min=min_lr), cycle, initial
    )
    # every cycle runs from initial_lr down to min_lr inclusive, then restarts at initial_lr
    assert_rates(ours, one_cycle * 3)
    assert ours[num_iters] == pytest.approx(min_lr, abs=1e-15)
    assert ours[cycle] == initial


def test_cosine_restarts_differ_from_torch_warm_restarts(ref: Any) -> None:
    # documented difference: PyTorch's warm restarts of T_0 = num_iters + 1 steps never reach eta_min
    ours = steps(CosineAnnealingLrSchedulerConfig(1.0, 3).init(), 8)
    lr_scheduler = ref.torch.optim.lr_scheduler
    theirs = torch_lrs(ref, lambda opt: lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=4), 8)
    assert ours[3] == pytest.approx(0.0, abs=1e-15)
    assert min(theirs) > 0.1
    assert [ours[0], ours[4]] == [theirs[0], theirs[4]] == [1.0, 1.0]


@pytest.mark.parametrize(("initial", "gamma"), [(0.8, 0.1), (0.083, 0.3), (1.0, 1.0), (0.5, 0.99)])
def test_exponential_matches_torch_exponential_lr(ref: Any, initial: float, gamma: float) -> None:
    ours = steps(ExponentialLrSchedulerConfig(initial, gamma).init(), 12)
    expected = torch_lrs(ref, lambda opt: ref.torch.optim.lr_scheduler.ExponentialLR(opt, gamma), 12, initial)
    assert_rates(ours, expected)


@pytest.mark.parametrize(("initial", "step_size", "gamma"), [(0.5, 3, 0.1), (0.1, 2, 2.0), (3.1, 1, 1.0)])
def test_step_matches_torch_step_lr(ref: Any, initial: float, step_size: int, gamma: float) -> None:
    ours = steps(StepLrSchedulerConfig(initial, step_size, gamma).init(), 10)
    expected = torch_lrs(
        ref, lambda opt: ref.torch.optim.lr_scheduler.StepLR(opt, step_size, gamma=gamma), 10, initial
    )
    assert_rates(ours, expected)


def test_step_default_gamma_is_a_tenth() -> None:
    assert_rates(steps(StepLrSchedulerConfig(0.4, 2).init(), 6), [0.4, 0.4, 0.04, 0.04, 0.004, 0.004])


@pytest.mark.parametrize(("factor", "warmup", "model_size"), [(10.0, 5, 512), (2.0, 1, 64), (1.0, 8, 3)])
def test_noam_matches_torch_lambda_lr(ref: Any, factor: float, warmup: int, model_size: int) -> None:
    ours = steps(NoamLrSchedulerConfig(factor, warmup, model_size).init(), 3 * warmup + 2)

    def noam(epoch: int) -> float:
        n = epoch + 1  # Noam counts steps from 1
        return float(factor * model_size**-0.5 * min(n**-0.5, n * warmup**-1.5))

    expected = torch_lrs(ref, lambda opt: ref.torch.optim.lr_scheduler.LambdaLR(opt, noam), 3 * warmup + 2)
    assert_rates(ours, expected)
    peak = ours.index(max(ours))
    assert peak == warmup - 1  # rises for warmup_steps steps, then decays


def test_noam_defaults_follow_burn() -> None:
    config = NoamLrSchedulerConfig(1.0)
    assert (config.warmup_steps, config.model_size) == (4000, 512)
    assert config.init().step() == pytest.approx(512**-0.5 * 4000**-1.5)


def test_sequential_matches_torch_sequential_lr(ref: Any) -> None:
    # warm up linearly from 0.01 to 0.1 in 4 steps, hold it one step, then anneal over 6 steps
    config = SequentialLrSchedulerConfig(
        (
            LinearLrSchedulerConfig(0.01, 0.1, 4),
            CosineAnnealingLrSchedulerConfig(0.1, 6, min_lr=0.001),
        ),
        (5,),
    )
    ours = steps(config.init(), 12)
    lr_scheduler = ref.torch.optim.lr_scheduler

    def sequential(opt: Any) -> Any:
        warmup = lr_scheduler.LinearLR(opt, start_factor=0.1, end_factor=1.0, total_iters=4)
        anneal = lr_scheduler.CosineAnnealingLR(opt, T_max=6, eta_min=0.001)
        return lr_scheduler.SequentialLR(opt, [warmup, anneal], milestones=[5])

    assert_rates(ours, torch_lrs(ref, sequential, 12, base_lr=0.1))


def test_sequential_three_schedulers_match_torch_and_burn(ref: Any) -> None:
    config = SequentialLrSchedulerConfig(
        (
            LinearLrSchedulerConfig(0.1, 0.3, 2),
            ExponentialLrSchedulerConfig(0.5, 0.5),
            CosineAnnealingLrSchedulerConfig(0.8, 2),
        ),
        (2, 5),
    )
    # the sequence of Burn's own test: each scheduler starts from its own first step
    assert_rates(steps(config.init(), 8), [0.1, 0.2, 0.5, 0.25, 0.125, 0.8, 0.4, 0.0])
    # on a shared base rate of 1, PyTorch expresses the same rates as factors
    same_on_base_one = SequentialLrSchedulerConfig(
        (
            LinearLrSchedulerConfig(0.1, 0.3, 2),
            ExponentialLrSchedulerConfig(1.0, 0.5),
            CosineAnnealingLrSchedulerConfig(1.0, 2, min_lr=0.2),
        ),
        (2, 5),
    )
    lr_scheduler = ref.torch.optim.lr_scheduler

    def sequential(opt: Any) -> Any:
        return lr_scheduler.SequentialLR(
            opt,
            [
                lr_scheduler.LinearLR(opt, start_factor=0.1, end_factor=0.3, total_iters=2),
                lr_scheduler.ExponentialLR(opt, 0.5),
                lr_scheduler.CosineAnnealingLR(opt, T_max=2, eta_min=0.2),
            ],
            milestones=[2, 5],
        )

    assert_rates(steps(same_on_base_one.init(), 8), torch_lrs(ref, sequential, 8))


def test_composed_product_matches_torch_chained_scheduler(ref: Any) -> None:
    config = (
        ComposedLrSchedulerConfig()
        .linear(LinearLrSchedulerConfig(0.25, 1.0, 3))
        .exponential(ExponentialLrSchedulerConfig(0.1, 0.9))
    )
    assert config.reduction is SchedulerReduction.PROD
    ours = steps(config.init(), 8)
    lr_scheduler = ref.torch.optim.lr_scheduler

    def chained(opt: Any) -> Any:
        return lr_scheduler.ChainedScheduler(
            [
                lr_scheduler.LinearLR(opt, start_factor=0.25, end_factor=1.0, total_iters=3),
                lr_scheduler.ExponentialLR(opt, 0.9),
            ]
        )

    assert_rates(ours, torch_lrs(ref, chained, 8, base_lr=0.1))


@pytest.mark.parametrize("reduction", list(SchedulerReduction))
def test_composed_reductions_combine_each_step(reduction: SchedulerReduction) -> None:
    children: tuple[LrSchedulerConfig, ...] = (
        CosineAnnealingLrSchedulerConfig(0.5, 3, min_lr=0.1),
        NoamLrSchedulerConfig(2.0, 2, 16),
        0.25,
    )
    composed = ComposedLrSchedulerConfig(children, reduction).init()
    assert isinstance(composed, ComposedLrScheduler)
    separate = [steps(SequentialLrSchedulerConfig((child,), ()).init(), 7) for child in children]
    combine = {
        SchedulerReduction.PROD: math.prod,
        SchedulerReduction.SUM: sum,
        SchedulerReduction.AVG: lambda rates: sum(rates) / len(rates),
    }[reduction]
    assert_rates(steps(composed, 7), [combine(rates) for rates in zip(*separate)])


def test_constant_lr() -> None:
    scheduler = ConstantLr(0.003)
    assert steps(scheduler, 3) == [0.003, 0.003, 0.003]
    assert scheduler.into_record() == {}
    assert scheduler.load_record({}) is scheduler
    with pytest.raises(ValueError, match="the learning rate must be finite, got inf"):
        ConstantLr(math.inf)


# -- records -----------------------------------------------------------------------------------------
RESUMABLE: dict[str, Any] = {
    "linear": LinearLrSchedulerConfig(1.0, 0.01, 6),
    "cosine": CosineAnnealingLrSchedulerConfig(1.0, 4, min_lr=0.1),
    "exponential": ExponentialLrSchedulerConfig(0.083, 0.3),
    "step": StepLrSchedulerConfig(0.007, 3, gamma=0.03),
    "noam": NoamLrSchedulerConfig(5.0, 4, 32),
    "sequential": SequentialLrSchedulerConfig(
        (
            LinearLrSchedulerConfig(0.1, 0.3, 2),
            ExponentialLrSchedulerConfig(0.5, 0.5),
            CosineAnnealingLrSchedulerConfig(0.8, 2),
        ),
        (2, 5),
    ),
    "composed": ComposedLrSchedulerConfig(
        (StepLrSchedulerConfig(0.5, 2), CosineAnnealingLrSchedulerConfig(0.9, 3)), SchedulerReduction.SUM
    ),
}


@pytest.mark.parametrize("saved_at", [0, 1, 4, 9])
@pytest.mark.parametrize("kind", list(RESUMABLE))
def test_record_resumes_the_same_sequence(kind: str, saved_at: int) -> None:
    config = RESUMABLE[kind]
    uninterrupted = config.init()
    expected = steps(uninterrupted, saved_at + 8)[saved_at:]

    interrupted = config.init()
    steps(interrupted, saved_at)
    record = json.loads(json.dumps(interrupted.into_record()))  # records are JSON-ready
    resumed = config.init()
    assert resumed.load_record(record) is resumed
    assert steps(resumed, 8) == expected
    if saved_at:  # a fresh scheduler would not continue the sequence
        assert steps(config.init(), 8) != expected


@pytest.mark.parametrize("kind", list(RESUMABLE))
def test_records_have_one_name_as_for_modules_and_optimizers(kind: str) -> None:
    scheduler = RESUMABLE[kind].init()
    assert callable(scheduler.into_record)
    assert not hasattr(scheduler, "to_record")


def test_sequential_record_nests_the_children_records() -> None:
    scheduler = RESUMABLE["sequential"].init()
    steps(scheduler, 3)
    assert isinstance(scheduler, SequentialLrScheduler)
    assert scheduler.into_record() == {
        "step": 3,
        "0.remaining_iters": 1,
        "1.previous_lr": 0.5,
        "2.current_iter": -1,
    }


def test_load_record_rejects_records_that_do_not_fit() -> None:
    linear = RESUMABLE["linear"].init()
    cosine_record = RESUMABLE["cosine"].init().into_record()
    with pytest.raises(
        ValueError, match=r"LinearLrScheduler.load_record: .*missing remaining_iters; unexpected current_iter"
    ):
        linear.load_record(cosine_record)
    with pytest.raises(ValueError, match=r"remaining_iters must be an int, got 2\.5"):
        linear.load_record({"remaining_iters": 2.5})
    with pytest.raises(
        ValueError, match=r"remaining_iters must be in \[0, 7\] for this scheduler's settings, got 9"
    ):
        linear.load_record({"remaining_iters": 9})
    with pytest.raises(ValueError, match=r"current_iter must be in \[-1, 4\]"):
        RESUMABLE["cosine"].init().load_record({"current_iter": 5})
    with pytest.raises(ValueError, match="previous_lr must be a number, got 'x'"):
        RESUMABLE["exponential"].init().load_record({"previous_lr": "x"})
    sequential = RESUMABLE["sequential"].init()
    with pytest.raises(ValueError, match=r"SequentialLrScheduler\.load_record: .*missing 2\.current_iter"):
        sequential.load_record({"step": 1, "0.remaining_iters": 2, "1.previous_lr": 1.0})
    # a child's bad value fails the whole load, after another child's good one
    with pytest.raises(ValueError, match=r"current_iter must be in \[-1, 2\]"):
        sequential.load_record({"step": 6, "0.remaining_iters": 0, "1.previous_lr": 1.0, "2.current_iter": 7})
    # a failed load changes nothing
    assert linear.step() == 1.0
    assert steps(sequential, 3) == pytest.approx([0.1, 0.2, 0.5])


# -- configs -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("config", "match"),
    [
        (LinearLrSchedulerConfig(0.0, 0.5, 100), "initial_lr must be greater than 0 and at most 1, got 0.0"),
        (LinearLrSchedulerConfig(1.5, 0.5, 100), "initial_lr must be greater than 0 and at most 1, got 1.5"),
        (LinearLrSchedulerConfig(0.5, -0.5, 100), "final_lr must be at least 0 and at most 1, got -0.5"),
        (LinearLrSchedulerConfig(0.5, 1.5, 100), "final_lr must be at least 0 and at most 1"),
        (LinearLrSchedulerConfig(0.9, 0.1, 0), "num_iters must be at least 1, got 0"),
        (CosineAnnealingLrSchedulerConfig(0.0, 10), "initial_lr must be greater than 0"),
        (CosineAnnealingLrSchedulerConfig(0.5, 10, min_lr=-0.1), "min_lr must be at least 0 and at most"),
        (
            CosineAnnealingLrSchedulerConfig(0.5, 10, min_lr=0.6),
            r"equal to the initial learning rate \(0.5\)",
        ),
        (CosineAnnealingLrSchedulerConfig(0.5, 0), "num_iters must be at least 1"),
        (ExponentialLrSchedulerConfig(1.5, 0.5), "initial_lr must be greater than 0 and at most 1"),
        (ExponentialLrSchedulerConfig(0.5, 0.0), "gamma must be greater than 0 and at most 1, got 0.0"),
        (ExponentialLrSchedulerConfig(0.5, 1.5), "gamma must be greater than 0 and at most 1, got 1.5"),
        (ExponentialLrSchedulerConfig(math.nan, 0.5), "initial_lr must be a finite number, got nan"),
        (StepLrSchedulerConfig(1.0, 0), "step_size must be at least 1, got 0"),
        (NoamLrSchedulerConfig(0.1, warmup_steps=0), "warmup_steps must be at least 1, got 0"),
        (NoamLrSchedulerConfig(0.1, model_size=0), "model_size must be at least 1, got 0"),
        (SequentialLrSchedulerConfig((), ()), "at least one scheduler is required"),
        (
            SequentialLrSchedulerConfig((0.1, 0.2, 0.3), (2,)),
            "number of milestones must be one less than the number of schedulers, got 1 milestones for 3",
        ),
        (SequentialLrSchedulerConfig((0.1, 0.2), (0,)), "milestones must be ints greater than zero"),
        (SequentialLrSchedulerConfig((0.1, 0.2, 0.3), (2, 2)), r"strictly increasing, got \[2, 2\]"),
        (
            SequentialLrSchedulerConfig((LinearLrSchedulerConfig(0.1, 0.2, 0),), ()),
            "LinearLrSchedulerConfig: num_iters must be at least 1",
        ),
        (ComposedLrSchedulerConfig(), "ComposedLrSchedulerConfig: at least one scheduler is required"),
    ],
)
def test_invalid_configs_raise_clear_errors(config: Any, match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        config.init()


def test_configs_of_wrong_types_raise_at_construction() -> None:
    with pytest.raises(TypeError, match=r"LinearLrSchedulerConfig: num_iters must be an int, got 2\.5"):
        LinearLrSchedulerConfig(0.9, 0.1, 2.5)  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"SequentialLrSchedulerConfig: schedulers\[0\] must be .* got 'fast'"
    ):
        SequentialLrSchedulerConfig(("fast",), ())  # type: ignore[arg-type]


def test_step_warns_about_atypical_values(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        StepLrSchedulerConfig(0.1, 2).init()
        assert not caplog.records
        scheduler = StepLrSchedulerConfig(-0.1, 2, gamma=2.0).init()
    messages = [record.getMessage() for record in caplog.records]
    assert any("initial learning rate -0.1 is not a positive number" in m for m in messages)
    assert any("gamma 2.0 is out of (0, 1)" in m for m in messages)
    assert steps(scheduler, 3) == [-0.1, -0.1, -0.2]  # allowed, as in Burn


def test_nested_configs_round_trip_through_json() -> None:
    config = SequentialLrSchedulerConfig(
        (
            LinearLrSchedulerConfig(1e-5, 1e-2, 100),
            ComposedLrSchedulerConfig(
                (
                    CosineAnnealingLrSchedulerConfig(1e-2, 900, min_lr=1e-4),
                    StepLrSchedulerConfig(1.0, 300, gamma=0.5),
                    ExponentialLrSchedulerConfig(1.0, 0.999),
                    NoamLrSchedulerConfig(2.0),
                    0.5,
                ),
                SchedulerReduction.AVG,
            ),
        ),
        (100,),
    )
    loaded = SequentialLrSchedulerConfig.from_json(config.to_json())
    assert loaded == config
    assert steps(loaded.init(), 120) == steps(config.init(), 120)
    with pytest.raises(ConfigError, match="fits none of"):
        SequentialLrSchedulerConfig.from_json('{"schedulers": [{"initial_lr": 0.1}], "milestones": []}')
