"""``LearnerBuilder`` and ``Learner`` (Burn's ``LearnerBuilder``/``Learner``): the supervised training
loop with metrics, the dashboard, file logging, checkpoints and resume, early stopping, interruption and
gradient accumulation."""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from burn_backend import Device, PendingRead, Recorder
from burn_backend.distributed import ProcessGroup
from burn_nn import Module
from burn_nn.optim import ConstantLr, GradientsAccumulator, GradientsParams, LrScheduler, ModuleOptimizer

from ._checkpoint import (
    AsyncCheckpointer,
    CheckpointingStrategy,
    ComposedCheckpointingStrategy,
    FileCheckpointer,
    KeepLastNCheckpoints,
    MetricCheckpointingStrategy,
)
from ._distributed import (
    GradientSync,
    QuietRenderer,
    broadcast_model,
    mean_across,
    rank_part,
)
from ._evaluator import LearnerSummary, run_epoch
from ._logger import FileMetricLogger, application_logger
from ._metrics._base import MetricEntry, MetricMetadata, adapt, to_host_async
from ._multi_device import SplitLoader, data_parallel_step
from ._output import run_train_step
from ._plot import write_curves
from ._renderer import CliRenderer, MetricsRenderer, TrainingProgress
from ._state import (
    Aggregate,
    Direction,
    Interrupter,
    MetricEarlyStoppingStrategy,
    MetricsStore,
    Split,
    capture_rng,
    restore_rng,
)
from ._step_replay import StepReplay, train_and_update, validate

__all__ = ["Learner", "LearnerBuilder", "default_renderer"]

log = logging.getLogger("burn_train")


def default_renderer() -> MetricsRenderer:
    """The dashboard when standard output is a terminal (and ``TERM`` is not ``dumb``), else one line
    per epoch."""
    if sys.stdout.isatty() and os.environ.get("TERM") != "dumb":
        from ._dashboard import TuiRenderer

        return TuiRenderer()
    return CliRenderer()


def _is_numeric(metric: Any) -> bool:
    return callable(getattr(metric, "running_value", None))


class LearnerBuilder:
    """Configures a ``Learner`` (Burn's ``LearnerBuilder``): every option returns the builder, and
    ``build(model, optimizer, lr_scheduler)`` ends the chain.

    Args:
        artifact_dir: where logs, checkpoints, ``experiment.log`` and ``curves.html`` go.

    Example:
        >>> learner = (
        ...     LearnerBuilder("artifacts")
        ...     .metric_train_numeric(AccuracyMetric())
        ...     .metric_valid_numeric(AccuracyMetric())
        ...     .metric_train_numeric(LossMetric())
        ...     .metric_valid_numeric(LossMetric())
        ...     .with_file_checkpointer(NamedMpkFileRecorder())
        ...     .devices([device])
        ...     .num_epochs(10)
        ...     .summary()
        ...     .build(model, AdamConfig().init(), 1e-3)
        ... )  # doctest: +SKIP
    """

    def __init__(self, artifact_dir: str | os.PathLike[str]) -> None:
        self._artifact_dir = Path(artifact_dir)
        self._train_metrics: list[tuple[Any, bool]] = []
        self._valid_metrics: list[tuple[Any, bool]] = []
        self._devices: list[Device] = []
        self._group: ProcessGroup | None = None
        self._num_epochs = 1
        self._grads_accumulation = 1
        self._checkpointer: FileCheckpointer | None = None
        self._strategy: CheckpointingStrategy | None = None
        self._checkpoint: int | None = None
        self._restore_best: MetricCheckpointingStrategy | None = None
        self._early_stopping: MetricEarlyStoppingStrategy | None = None
        self._interrupter = Interrupter()
        self._renderer: MetricsRenderer | None = None
        self._app_logger = True
        self._summary = False
        self._step_replay: StepReplay | None = None

    # -- metrics ------------------------------------------------------------------------------------
    def _add(self, where: str, metric: Any, split: list[tuple[Any, bool]], numeric: bool) -> LearnerBuilder:
        if not all(callable(getattr(metric, name, None)) for name in ("name", "update", "clear")):
            raise TypeError(
                f"LearnerBuilder.{where}: expected a Metric (name, update, clear), got {metric!r}"
            )
        if numeric and not _is_numeric(metric):
            raise TypeError(f"LearnerBuilder.{where}: {metric.name()} is not Numeric (no running_value)")
        if any(existing.name() == metric.name() for existing, _ in split):
            raise ValueError(
                f"LearnerBuilder.{where}: a metric named {metric.name()!r} is registered already"
            )
        split.append((metric, numeric))
        return self

    def metric_train(self, metric: Any) -> LearnerBuilder:
        """Register a training metric (shown and logged)."""
        return self._add("metric_train", metric, self._train_metrics, False)

    def metric_valid(self, metric: Any) -> LearnerBuilder:
        """Register a validation metric (shown and logged)."""
        return self._add("metric_valid", metric, self._valid_metrics, False)

    def metric_train_numeric(self, metric: Any) -> LearnerBuilder:
        """Register a numeric training metric: also plotted and stored per epoch."""
        return self._add("metric_train_numeric", metric, self._train_metrics, True)

    def metric_valid_numeric(self, metric: Any) -> LearnerBuilder:
        """Register a numeric validation metric: also plotted, stored per epoch, usable for the best
        checkpoint and early stopping."""
        return self._add("metric_valid_numeric", metric, self._valid_metrics, True)

    def metrics(self, *metrics: Any) -> LearnerBuilder:
        """Register each metric for training and (a copy) for validation, as numeric where it is."""
        for metric in metrics:
            numeric = _is_numeric(metric)
            self._add("metrics", metric, self._train_metrics, numeric)
            self._add("metrics", copy.deepcopy(metric), self._valid_metrics, numeric)
        return self

    # -- options ------------------------------------------------------------------------------------
    def devices(self, devices: Sequence[Device]) -> LearnerBuilder:
        """The devices to train on; the model is moved to the first.

        With several devices the training is data-parallel: the train loader (a ``DataLoader``) is split
        into one part per device, each step runs ``train_step`` on every device's batch with a copy of
        the model there, and the gradients are averaged on the first device before the optimizer's
        step (so ``n`` devices with batches of ``b`` train like one with batches of ``n * b``).
        Validation runs on the first device.
        """
        devices = list(devices)
        if not devices or not all(isinstance(d, Device) for d in devices):
            raise TypeError(f"LearnerBuilder.devices: expected a non-empty list of Devices, got {devices!r}")
        if len(set(devices)) != len(devices):
            raise ValueError(f"LearnerBuilder.devices: a device is listed twice in {devices!r}")
        if len({d.backend for d in devices}) > 1:
            raise ValueError(
                f"LearnerBuilder.devices: the devices {[str(d) for d in devices]} belong to different "
                "backends; data-parallel training needs devices of one backend"
            )
        self._devices = devices
        return self

    def distributed(self, group: ProcessGroup | None = None) -> LearnerBuilder:
        """Train data-parallel over processes, one per device (PyTorch's DDP; Burn's multi-node
        learner): this process is one of a run started by ``python -m burn_train.launch``.

        Every process builds the same learner with its own device (``.devices([device])``, such as
        ``Cuda().device(group.local_rank)``) and calls ``fit`` with the full loaders: rank 0's model is
        sent to all, each process trains and validates on its own equal part of the items, gradients
        are averaged over the processes after each step (NCCL between GPUs), the epoch's metric values
        are averaged, and rank 0 alone draws the dashboard and writes the checkpoints. ``n`` processes
        with batches of ``b`` train like one with batches of ``n * b``.

        Args:
            group: the run's processes; ``ProcessGroup.from_environment()`` (the launcher's variables)
                by default.

        Example:
            >>> builder = LearnerBuilder("artifacts").distributed()  # doctest: +SKIP
        """
        if group is None:
            group = ProcessGroup.from_environment()
        if not isinstance(group, ProcessGroup):
            raise TypeError(
                f"LearnerBuilder.distributed: expected a ProcessGroup, got {type(group).__name__}"
            )
        self._group = group
        return self

    def num_epochs(self, num_epochs: int) -> LearnerBuilder:
        """The number of epochs (default 1)."""
        if isinstance(num_epochs, bool) or not isinstance(num_epochs, int) or num_epochs < 1:
            raise ValueError(f"LearnerBuilder.num_epochs: expected an int >= 1, got {num_epochs!r}")
        self._num_epochs = num_epochs
        return self

    def grads_accumulation(self, steps: int) -> LearnerBuilder:
        """Sum the gradients of ``steps`` batches before each optimizer step (default 1)."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"LearnerBuilder.grads_accumulation: expected an int >= 1, got {steps!r}")
        self._grads_accumulation = steps
        return self

    def with_file_checkpointer(self, recorder: Recorder | None = None) -> LearnerBuilder:
        """Save a checkpoint after each epoch into ``<artifact_dir>/checkpoint`` with ``recorder``
        (default: burn-record's full-precision named MessagePack). Unless a strategy is set, the last 2
        epochs are kept, and the best by validation loss where a numeric ``Loss`` metric validates."""
        self._checkpointer = FileCheckpointer(recorder, self._artifact_dir / "checkpoint")
        return self

    def with_checkpointing_strategy(self, strategy: CheckpointingStrategy) -> LearnerBuilder:
        """Which checkpoints to keep (see ``KeepLastNCheckpoints``, ``MetricCheckpointingStrategy``)."""
        if not callable(getattr(strategy, "to_delete", None)):
            raise TypeError(
                f"LearnerBuilder.with_checkpointing_strategy: expected a strategy, got {strategy!r}"
            )
        self._strategy = strategy
        return self

    def checkpoint(self, epoch: int) -> LearnerBuilder:
        """Resume from the checkpoint saved at ``epoch`` (after it, or within it where the run was
        stopped mid-epoch)."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
            raise ValueError(f"LearnerBuilder.checkpoint: expected an epoch >= 1, got {epoch!r}")
        self._checkpoint = epoch
        return self

    def restore_best(
        self,
        metric: Any = "Loss",
        aggregate: Aggregate = Aggregate.MEAN,
        direction: Direction = Direction.LOWEST,
        split: Split = Split.VALID,
    ) -> LearnerBuilder:
        """Make ``fit`` return the model of the best epoch by ``metric`` rather than the last one: the
        checkpoint of that epoch is kept (whatever the checkpointing strategy) and its model loaded at
        the end of the run. Needs ``with_file_checkpointer()`` and the metric registered as numeric for
        ``split``; it does not combine with ``distributed()`` (rank 0 alone holds the checkpoints).

        Args:
            metric: the metric (or its name), ``"Loss"`` by default.
            aggregate: how an epoch's value is made from its steps'.
            direction: which way is better (``Direction.HIGHEST`` for an accuracy).
            split: the split whose values count (validation by default).

        Example:
            >>> builder = LearnerBuilder("artifacts").with_file_checkpointer().restore_best("Loss")
        """
        self._restore_best = MetricCheckpointingStrategy(metric, aggregate, direction, split)
        return self

    def early_stopping(self, strategy: MetricEarlyStoppingStrategy) -> LearnerBuilder:
        """Stop when ``strategy`` says so (checked after each epoch)."""
        if not callable(getattr(strategy, "should_stop", None)):
            raise TypeError(f"LearnerBuilder.early_stopping: expected a stopping strategy, got {strategy!r}")
        self._early_stopping = strategy
        return self

    def interrupter(self) -> Interrupter:
        """The learner's ``Interrupter``: ``stop()`` from anywhere ends the run after the current
        optimizer step, with a checkpoint."""
        return self._interrupter

    def with_interrupter(self, interrupter: Interrupter) -> LearnerBuilder:
        """Use ``interrupter`` (shared with other code) to stop the run."""
        self._interrupter = interrupter
        return self

    def renderer(self, renderer: MetricsRenderer) -> LearnerBuilder:
        """How the run is shown (default: the dashboard on a terminal, else one line per epoch)."""
        self._renderer = renderer
        return self

    def with_application_logger(self, enabled: bool = True) -> LearnerBuilder:
        """Whether log records go to ``<artifact_dir>/experiment.log`` during ``fit`` (default yes)."""
        self._app_logger = enabled
        return self

    def summary(self) -> LearnerBuilder:
        """Print the ``LearnerSummary`` table at the end of ``fit``."""
        self._summary = True
        return self

    def with_step_replay(self, replay: StepReplay | None) -> LearnerBuilder:
        """Run each training step (``train_step`` and the optimizer step) as one function wrapped by
        ``replay``, a recorder such as ``burn_fusion.replay``: on ``autodiff-fusion-cuda`` the step is
        recorded once and replayed as one CUDA graph launch; where the device cannot record, the
        function just runs. Validation steps (``valid_step``) are replayed too. ``None`` turns it off.

        The step must not read values on the host (such a step runs eagerly, with a warning), the
        learning rate must stay the same from step to step (each new rate is a new call signature), and
        Adam's step count must live on the device (``AdamConfig(capturable=True)``). It does not combine
        with several devices, ``distributed()`` or ``grads_accumulation``.

        Example:
            >>> from burn_fusion import replay
            >>> builder = LearnerBuilder("artifacts").with_step_replay(replay)
        """
        if replay is not None and not callable(replay):
            raise TypeError(
                f"LearnerBuilder.with_step_replay: expected a step recorder such as burn_fusion.replay, "
                f"got {type(replay).__name__}"
            )
        self._step_replay = replay
        return self

    def build(self, model: Module, optimizer: ModuleOptimizer, lr_scheduler: Any) -> Learner:
        """The learner of ``model`` with ``optimizer`` and ``lr_scheduler`` (a float for a constant
        rate, an ``LrScheduler``, or a scheduler config with ``init()``).

        Raises:
            TypeError: the model lacks ``train_step``/``valid_step``, or an argument has the wrong type.
        """
        for method in ("train_step", "valid_step"):
            if not callable(getattr(model, method, None)):
                raise TypeError(
                    f"LearnerBuilder.build: the model ({type(model).__name__}) needs a {method}(batch) "
                    "method (the TrainStep and ValidStep protocols)"
                )
        if not callable(getattr(optimizer, "step", None)):
            raise TypeError(f"LearnerBuilder.build: expected an optimizer, got {type(optimizer).__name__}")
        scheduler: LrScheduler
        if isinstance(lr_scheduler, bool):
            raise TypeError("LearnerBuilder.build: the learning rate cannot be a bool")
        if isinstance(lr_scheduler, (int, float)):
            scheduler = ConstantLr(float(lr_scheduler))
        elif isinstance(lr_scheduler, LrScheduler):
            scheduler = lr_scheduler
        elif callable(getattr(lr_scheduler, "init", None)):
            scheduler = lr_scheduler.init()
        else:
            raise TypeError(
                f"LearnerBuilder.build: expected a learning rate, an LrScheduler or its config, got "
                f"{type(lr_scheduler).__name__}"
            )
        if self._step_replay is not None and (
            len(self._devices) > 1 or self._group is not None or self._grads_accumulation > 1
        ):
            raise ValueError(
                "LearnerBuilder.build: with_step_replay() replays the step of one device with its "
                f"optimizer step; it does not combine with {len(self._devices)} devices, distributed() "
                f"or grads_accumulation({self._grads_accumulation})"
            )
        strategy = self._strategy
        if strategy is None and self._checkpointer is not None:
            strategies: list[CheckpointingStrategy] = [KeepLastNCheckpoints(2)]
            if any(m.name() == "Loss" and numeric for m, numeric in self._valid_metrics):
                strategies.append(MetricCheckpointingStrategy("Loss"))
            strategy = ComposedCheckpointingStrategy(strategies)
        if self._restore_best is not None:
            self._check_restore_best(self._restore_best)
            assert strategy is not None  # a checkpointer is set: it has a strategy
            strategy = ComposedCheckpointingStrategy([strategy, self._restore_best])  # the best is kept
        return Learner(self, model, optimizer, scheduler, strategy)

    def _check_restore_best(self, best: MetricCheckpointingStrategy) -> None:
        where = f"LearnerBuilder.restore_best({best.metric!r})"
        if self._checkpointer is None:
            raise ValueError(
                f"{where}: the best epoch's model is read from its checkpoint; add with_file_checkpointer()"
            )
        if self._group is not None:
            raise ValueError(
                f"{where}: does not combine with distributed() (rank 0 alone holds the checkpoints)"
            )
        metrics = self._valid_metrics if best.split is Split.VALID else self._train_metrics
        numeric = sorted(m.name() for m, is_numeric in metrics if is_numeric)
        if best.metric not in numeric:
            raise ValueError(
                f"{where}: no numeric {best.split.value} metric of that name (registered: "
                f"{numeric or 'none'}); register it with metric_{best.split.value}_numeric"
            )


class Learner:
    """Trains a model (Burn's ``Learner``); made by ``LearnerBuilder.build``. ``fit`` runs the epochs
    and returns the trained model."""

    def __init__(
        self,
        builder: LearnerBuilder,
        model: Module,
        optimizer: ModuleOptimizer,
        scheduler: LrScheduler,
        strategy: CheckpointingStrategy | None,
    ) -> None:
        self.model = model
        self.optimizer = optimizer
        self.lr_scheduler = scheduler
        self._b = builder
        self._strategy = strategy
        self._store = MetricsStore()
        self._group = builder._group
        self._stop_agreed = False  # distributed: every process's stop, agreed in the last all-reduce
        self._sync: GradientSync | None = None  # distributed: gradients averaged while backward runs
        self._rank = 0 if self._group is None else self._group.rank
        # each process logs (and draws its curves) in a directory of its own; rank 0's is the run's
        self._log_dir = (
            builder._artifact_dir if self._rank == 0 else builder._artifact_dir / f"rank-{self._rank}"
        )
        self._logger = FileMetricLogger(self._log_dir)
        self._lr: float | None = None
        self._last: dict[str, dict[str, MetricEntry]] = {"train": {}, "valid": {}}
        self._validating = True
        devices = builder._devices or model.devices()
        if not devices:
            raise ValueError("Learner: the model has no parameter, so no device; pass .devices([device])")
        self.device = devices[0]
        self.devices = list(builder._devices) or [self.device]
        if self._group is not None and len(self.devices) > 1:
            raise ValueError(
                "Learner: distributed() trains one device per process; pass one device to devices([...])"
            )
        recorder = builder._step_replay
        self._replayed = None if recorder is None else recorder(train_and_update)
        self._replayed_valid = None if recorder is None else recorder(validate)
        # checkpoints are written while the next epoch trains
        self._checkpointer = (
            None if builder._checkpointer is None else AsyncCheckpointer(builder._checkpointer)
        )

    @property
    def store(self) -> MetricsStore:
        """Every epoch's metric values of the run."""
        return self._store

    # -- the run ------------------------------------------------------------------------------------
    def fit(self, train_loader: Any, valid_loader: Any = None) -> Module:
        """Train for the configured epochs (from the checkpoint, when one is set), validating after each
        epoch, and return the trained model.

        Args:
            train_loader: a ``DataLoader`` (moved to the training device), or any iterable of batches.
            valid_loader: a ``DataLoader`` (moved to the inner, non-autodiff device), any iterable, or
                ``None`` for no validation.

        Raises:
            FileNotFoundError: the checkpoint to resume from does not exist.
        """
        b = self._b
        b._artifact_dir.mkdir(parents=True, exist_ok=True)
        if self.model.devices() and self.model.devices()[0] != self.device:
            self.model = self.model.to_device(self.device)
        inner = self._inner_device()
        train_loader = self._moved(train_loader, self.device)
        if len(self.devices) > 1:
            train_loader = SplitLoader(train_loader, self.devices)
        valid_loader = None if valid_loader is None else self._moved(valid_loader, inner)
        self._validating = valid_loader is not None
        renderer = b._renderer or default_renderer()
        if self._group is not None:
            train_loader = rank_part(train_loader, self._group, "train")
            if valid_loader is not None:
                valid_loader = rank_part(valid_loader, self._group, "valid")
            self.model = broadcast_model(self.model, self._group)
            if self._group.world_size > 1:
                self._sync = GradientSync(self.model, inner, self._group)
            if self._rank != 0:
                renderer = QuietRenderer()
        if hasattr(renderer, "set_on_quit"):
            renderer.set_on_quit(lambda: b._interrupter.stop("q pressed"))
        logging_context = application_logger(b._artifact_dir) if b._app_logger else contextlib.nullcontext()
        with logging_context, self._sigint(b._interrupter):
            start_epoch, resumed_mid_epoch = 1, False
            if b._checkpoint is not None:
                start_epoch, resumed_mid_epoch = self._restore(b._checkpoint, train_loader, valid_loader)
            else:  # a new run: the metric logs of an earlier run in the same folder go, as Burn's do
                self._logger.truncate("train", 1, 0)
                self._logger.truncate("valid", 1, 0)
            log.info("fit: %s epochs on %s, starting at epoch %s", b._num_epochs, self.device, start_epoch)
            renderer.start(str(b._artifact_dir), b._num_epochs, start_epoch)
            try:
                self._epochs(start_epoch, resumed_mid_epoch, train_loader, valid_loader, renderer)
                if self._checkpointer is not None:
                    self._checkpointer.wait()  # the last checkpoint is on disk when fit returns
                if b._restore_best is not None:
                    self._load_best(b._restore_best, renderer)
            finally:
                if self._checkpointer is not None:
                    with contextlib.suppress(Exception):  # an error already on its way wins
                        self._checkpointer.wait()
                renderer.close()
                self._logger.close()
        if b._summary:
            print(LearnerSummary.from_store(self._store, model=self.model))
        return self.model

    def _epochs(
        self, start: int, resumed: bool, train_loader: Any, valid_loader: Any, renderer: MetricsRenderer
    ) -> None:
        b = self._b
        for epoch in range(start, b._num_epochs + 1):
            began = time.perf_counter()
            if not self._train_epoch(epoch, train_loader, renderer, resumed and epoch == start):
                self._save(epoch, train_loader, valid_loader, complete=False, renderer=renderer)
                renderer.status(f"Stopped in epoch {epoch}: {b._interrupter.message or 'interrupted'}")
                log.info("fit: stopped in epoch %s (%s)", epoch, b._interrupter.message)
                return
            if valid_loader is not None:
                self._last["valid"] = run_epoch(
                    self.model.valid(), "valid_step", valid_loader, b._valid_metrics, "valid", epoch,
                    b._num_epochs, self._logger, renderer, lambda: self._lr, self._replayed_valid,
                )  # fmt: skip
            values = self._end_epoch(epoch, partial=resumed and epoch == start)
            renderer.end_epoch(epoch, values, time.perf_counter() - began)
            self._save(epoch, train_loader, valid_loader, complete=True, renderer=renderer)
            self._write_curves()
            if b._early_stopping is not None and b._early_stopping.should_stop(epoch, self._store):
                renderer.status(
                    f"Early stopping after epoch {epoch}: {b._early_stopping.metric} stopped improving"
                )
                log.info("fit: early stopping after epoch %s", epoch)
                return
            if self._should_stop():
                renderer.status(f"Stopped after epoch {epoch}: {b._interrupter.message or 'interrupted'}")
                return

    def _train_epoch(self, epoch: int, loader: Any, renderer: MetricsRenderer, resumed: bool) -> bool:
        """One training epoch; ``False`` when interrupted before its end."""
        b = self._b
        iterator: Iterator[Any] = loader.iter() if callable(getattr(loader, "iter", None)) else iter(loader)
        iterations = len(loader) if hasattr(loader, "__len__") else 0
        iteration = getattr(iterator, "position", 0)
        accumulator, accumulated = GradientsAccumulator(), 0
        for metric, _ in b._train_metrics:
            metric.clear()
        pending: tuple[PendingRead[list[Any]], list[Any], MetricMetadata, int] | None = None
        for batch in iterator:
            iteration += 1
            grads: GradientsParams | None = None  # None: the replayed step updated the model
            if self._replayed is not None:
                self._lr = self.lr_scheduler.step()
                items = [self._replayed_step(batch)]
            elif isinstance(loader, SplitLoader):
                outputs, grads = data_parallel_step(self.model, self.devices, batch)
                items = [output.item for output in outputs]
            else:
                sync = self._sync if b._grads_accumulation == 1 else None  # else: averaged once summed
                with contextlib.nullcontext() if sync is None else sync.watch(self.model):
                    output = run_train_step(self.model, batch)
                items, grads = [output.item], output.grads
            if grads is None:
                pass  # updated by the replayed step
            elif b._grads_accumulation > 1:
                accumulator.accumulate(self.model, grads)
                accumulated += 1
                if accumulated == b._grads_accumulation:
                    self._optimize(accumulator.grads())
                    accumulated = 0
            else:
                self._optimize(grads)
            progress = iterator.progress() if hasattr(iterator, "progress") else (iteration, iterations)
            metadata = MetricMetadata(progress, epoch, b._num_epochs, iteration, self._lr)
            metrics = [metric for metric, _ in b._train_metrics]
            read = to_host_async([adapt(item, metric) for item in items for metric in metrics])
            del items  # released before the next step: a replay copies out the outputs still held
            # the last step's metrics are read once this one is queued: the device runs one step while
            # the host waits for the other's values and prepares the next
            if pending is not None:
                self._update_train_metrics(*pending, renderer)
            pending = (read, metrics, metadata, iterations)
            if accumulated == 0 and self._should_stop() and (iterations == 0 or iteration < iterations):
                self._update_train_metrics(*pending, renderer)
                if hasattr(iterator, "close"):
                    iterator.close()
                return False
        if pending is not None:
            self._update_train_metrics(*pending, renderer)
        if accumulated:  # a last, partial accumulation is applied rather than dropped
            self._optimize(accumulator.grads())
        self._logger.end_epoch("train", epoch)
        return True

    def _update_train_metrics(
        self,
        read: PendingRead[list[Any]],
        metrics: list[Any],
        metadata: MetricMetadata,
        iterations: int,
        renderer: MetricsRenderer,
    ) -> None:
        """Update, log and render the training metrics with one step's read inputs (each device's
        output updates them in turn)."""
        inputs = read.wait()
        entries: list[MetricEntry] = []
        for start in range(0, len(inputs), max(1, len(metrics))):
            entries = [m.update(i, metadata) for m, i in zip(metrics, inputs[start : start + len(metrics)])]
            self._logger.log("train", metadata.epoch, entries)
        self._last["train"].update((entry.name, entry) for entry in entries)
        renderer.update(
            TrainingProgress(
                "train",
                metadata.epoch,
                metadata.epoch_total,
                metadata.iteration,
                iterations,
                *metadata.progress,
            ),
            entries,
        )

    def _replayed_step(self, batch: Any) -> Any:
        """The replayed training and optimizer step on ``batch``: updates the model, returns the item."""
        assert self._replayed is not None
        item, self.model = self._replayed(self.model, self.optimizer, self._lr, batch)
        return item

    def _optimize(self, grads: GradientsParams) -> None:
        if self._group is not None:
            asked = self._b._interrupter.should_stop()
            if self._sync is not None:
                grads, self._stop_agreed = self._sync.finish(grads, asked)
            else:  # a run of one process
                self._stop_agreed = asked
            if self._stop_agreed and not asked:
                self._b._interrupter.stop("another process of the run stopped")
        self._lr = self.lr_scheduler.step()
        self.model = self.optimizer.step(self._lr, self.model, grads)

    def _should_stop(self) -> bool:
        """Whether to stop: this process's interrupter, or with several processes the stop they agreed
        on in the last step's all-reduce (so that all stop after the same step)."""
        return self._stop_agreed if self._group is not None else self._b._interrupter.should_stop()

    def _end_epoch(self, epoch: int, partial: bool = False) -> dict[str, list[tuple[MetricEntry, float]]]:
        """Store and return the epoch's values. After a resume mid-epoch (``partial``), the training
        metrics saw only the batches after the resume point; their epoch values come from the log files
        then (the items-weighted mean of every batch's value: exact for the loss and accuracies)."""
        values: dict[str, list[tuple[MetricEntry, float]]] = {}
        splits = [("train", self._b._train_metrics)]
        if self._validating:
            splits.append(("valid", self._b._valid_metrics))
        measured: list[tuple[str, Any, float]] = []
        for split, metrics in splits:
            for metric, numeric in metrics:
                if not numeric:
                    continue
                value = float(metric.running_value())
                if partial and split == "train":
                    value = self._logger.epoch_mean("train", epoch, metric.name())
                measured.append((split, metric, value))
        if self._group is not None:  # every process saw as many items: the run's value is the mean
            means = mean_across([value for _, _, value in measured], self._group)
            measured = [(split, metric, mean) for (split, metric, _), mean in zip(measured, means)]
        for split, _ in splits:
            values[split] = []
        for split, metric, value in measured:
            self._store.record(Split(split), epoch, metric.name(), value)
            entry = self._last[split].get(metric.name()) or MetricEntry(metric.name(), "", "")
            values[split].append((entry, value))
        log.info(
            "epoch %s: %s",
            epoch,
            "; ".join(f"{s} {e.name} {v:.6g}" for s, pairs in values.items() for e, v in pairs),
        )
        return values

    # -- checkpoints --------------------------------------------------------------------------------
    def _load_best(self, best: MetricCheckpointingStrategy, renderer: MetricsRenderer) -> None:
        """Replace the model by the best epoch's (``restore_best``), from its checkpoint."""
        assert self._checkpointer is not None
        epoch = best.best(self._store)
        what = f"{best.split.value} {best.metric}"
        if epoch is None:
            renderer.status(f"restore_best: no epoch has a {what} value; returning the last model")
            log.warning("fit: no epoch has a %s value; the last model is returned", what)
            return
        self.model = self.model.load_record(self._checkpointer.load(epoch, "model"))
        value = self._store.find_metric(best.metric, epoch, best.aggregate, best.split)
        renderer.status(f"Returning the model of epoch {epoch}, the best by {what} ({value})")
        log.info("fit: returning the model of epoch %s, the best by %s (%s)", epoch, what, value)

    def _save(self, epoch: int, train: Any, valid: Any, *, complete: bool, renderer: MetricsRenderer) -> None:
        checkpointer = self._checkpointer
        if checkpointer is None or self._rank != 0:  # the processes' replicas are equal: rank 0 writes
            return
        self._logger.flush()
        train_state = train.state() if callable(getattr(train, "state", None)) else None
        state = {
            "epoch": epoch,
            "complete": complete,
            "position": int(train_state["position"]) if train_state else 0,
            "train_loader": train_state,
            "valid_loader": valid.state() if callable(getattr(valid, "state", None)) else None,
            "rng": capture_rng(self.devices),
            "store": {
                split.value: {name: {str(e): v for e, v in self._store.history(name, split).items()}
                              for name in self._store.names(split)}
                for split in Split
            },
        }  # fmt: skip
        records = {
            "model": self.model.into_record(),
            "optim": self.optimizer.into_record(),
            "scheduler": self.lr_scheduler.into_record(),
            "state": state,
        }
        checkpointer.wait()  # the previous checkpoint is whole: the strategy sees it on disk
        doomed: list[int] = []
        if complete and self._strategy is not None:
            saved = sorted({*(e for e in checkpointer.inner.epochs() if e < epoch), epoch})
            doomed = sorted(self._strategy.to_delete(epoch, saved, self._store))
        inner = checkpointer.inner
        what = "complete" if complete else f"at batch {state['position']}"

        def finished() -> None:  # on the writer, once this epoch's files are durable
            log.info("checkpoint: saved epoch %s (%s)", epoch, what)
            for old in doomed:
                inner.delete(old)

        checkpointer.save(epoch, records, then=finished)
        if not complete:
            renderer.status(f"Checkpoint saved in epoch {epoch} at batch {state['position']}")

    def _restore(self, epoch: int, train: Any, valid: Any) -> tuple[int, bool]:
        checkpointer = self._checkpointer
        if checkpointer is None:
            raise ValueError(
                "Learner: checkpoint(epoch) needs with_file_checkpointer() to know where to read"
            )
        # every file is read and checked to belong to the checkpoint before any is applied
        state, model, optim, scheduler = (
            checkpointer.load(epoch, part) for part in ("state", "model", "optim", "scheduler")
        )
        self.model = self.model.load_record(model)
        self.optimizer.load_record(optim)
        self.lr_scheduler.load_record(scheduler)
        missing = restore_rng(state["rng"], self.devices)
        if missing:
            log.warning("resume: no random generator state for %s; runs may differ", ", ".join(missing))
        for loader, key in ((train, "train_loader"), (valid, "valid_loader")):
            if state.get(key) is not None and callable(getattr(loader, "load_state", None)):
                loader.load_state(state[key])
        for split_name, metrics in state.get("store", {}).items():
            for name, history in metrics.items():
                for e, v in history.items():
                    self._store.record(Split(split_name), int(e), name, float(v))
        complete, position = bool(state["complete"]), int(state["position"])
        if complete:
            self._logger.truncate("train", epoch + 1, 0)
            self._logger.truncate("valid", epoch + 1, 0)
        else:  # one log line per batch: several a step with several devices
            lines = train.batches_before(position) if isinstance(train, SplitLoader) else position
            self._logger.truncate("train", epoch, lines)
            self._logger.truncate("valid", epoch, 0)
        self._store.truncate(epoch if complete else epoch - 1)
        log.info("resume: from the checkpoint of epoch %s (%s)", epoch, "complete" if complete else position)
        return (epoch + 1, False) if complete else (epoch, True)

    # -- helpers ------------------------------------------------------------------------------------
    def _inner_device(self) -> Device:
        backend = self.device.backend
        if backend.is_autodiff and hasattr(backend, "inner_device"):
            return backend.inner_device(self.device)  # type: ignore[no-any-return]
        return self.device

    @staticmethod
    def _moved(loader: Any, device: Device) -> Any:
        if callable(getattr(loader, "to_device", None)) and getattr(loader, "device", device) != device:
            return loader.to_device(device)
        return loader

    def _write_curves(self) -> None:
        metrics: dict[str, dict[str, dict[int, float]]] = {}
        for split in (Split.TRAIN, Split.VALID):
            for name in self._store.names(split):
                metrics.setdefault(name, {})[split.value] = self._store.history(name, split)
        if metrics:
            write_curves(self._log_dir / "curves.html", f"Training curves: {self._log_dir}", metrics)

    @staticmethod
    @contextlib.contextmanager
    def _sigint(interrupter: Interrupter) -> Iterator[None]:
        """Ctrl-C asks the run to stop (checkpoint, then return); a second Ctrl-C raises as usual."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.getsignal(signal.SIGINT)

        def handler(signum: int, frame: Any) -> None:
            if interrupter.should_stop():
                signal.signal(signal.SIGINT, previous)
                raise KeyboardInterrupt
            interrupter.stop("Ctrl-C")

        signal.signal(signal.SIGINT, handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
