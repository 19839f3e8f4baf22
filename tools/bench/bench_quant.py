"""Quantized matmul on the CPU, side by side: NdArray's int8 GEMM (exact int32 result) against NumPy's
f32 ``@`` at 1024^3, interleaved medians and their ratio (issue 41's bar: >= 1.0x).

Run: ``python tools/bench/bench_quant.py [--size 1024] [--repeat 5] [--modules [--quick] [--steps N]
[--full]]``; ``--modules`` adds the quantized transformer rows: a character transformer trained on the
repo's docs (6 layers at d 128 by default, ``--full`` d 512, ``--quick`` 2 layers), then next-token
agreement of each quantized form with it on held-out text, file size and forward time (the GPTQ rows
calibrate on 8 batches of training windows, never the held-out text). On a loaded
machine run it with ``BURN_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1``: two BLAS threads fighting for shared
cores made training several times slower.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from burn_ndarray._ops._quant import gemm_i8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--modules", action="store_true", help="also the quantized transformer rows")
    parser.add_argument("--quick", action="store_true", help="a 2-layer d-128 transformer (small machines)")
    parser.add_argument("--steps", type=int, default=1000, help="training steps of the transformer")
    parser.add_argument("--full", action="store_true", help="train the 6-layer transformer at d 512")
    args = parser.parse_args()
    n = args.size
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (n, n), dtype=np.int8)
    b = rng.integers(-128, 128, (n, n), dtype=np.int8)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    gemm_i8(a[:8, :8], b[:8, :8])  # compile
    int8_times, f32_times = [], []
    for _ in range(args.repeat):  # interleaved: both sides see the same load
        start = time.perf_counter()
        gemm_i8(a, b)
        int8_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        _ = af @ bf
        f32_times.append(time.perf_counter() - start)
    i8, f32 = statistics.median(int8_times), statistics.median(f32_times)
    ops = 2 * n**3
    print(f"int8 GEMM {n}^3: {i8 * 1e3:.1f} ms ({ops / i8 / 1e9:.1f} GOP/s)")
    print(f"NumPy f32 @ {n}^3: {f32 * 1e3:.1f} ms ({ops / f32 / 1e9:.1f} GFLOP/s)")
    print(f"int8 / f32 throughput: {f32 / i8:.2f}x (bar: >= 1.0x)")
    if args.modules:
        transformer_rows(args.quick, args.steps, args.full, args.repeat)


def transformer_rows(quick: bool, steps: int, full: bool, repeat: int) -> None:
    """Issue 41's module rows. A character language model (embedding, learned positions, a pre-norm
    transformer encoder with a causal mask, a linear head; bytes of the repo's docs as tokens, vocab 128)
    is trained briefly (Adam, batches of 32 x 64) on the docs' Markdown, then quantized in each of
    ``_variants``' ways: next-token agreement (argmax) with the f32 model on 4,096 held-out positions,
    record file size against the f32 file, and CPU forward time (interleaved medians).

    Training the 6-layer d-512 model for long enough takes tens of minutes on two cores, so by default the
    trained model is the same architecture at d 128 (``--full``: d 512); the file-size rows are also
    given for the untrained 6-layer d-512 model, whose sizes do not depend on the weights' values.
    """
    import os
    import tempfile

    from burn_autodiff import Autodiff
    from burn_backend import Tensor
    from burn_ndarray import NdArray
    from burn_nn.loss import CrossEntropyLossConfig
    from burn_nn.optim import AdamConfig, GradientsParams
    from burn_record import NamedMpkFileRecorder

    layers, d = (2, 128) if quick else (6, 512 if full else 128)
    seq, batch = 64, 32
    train_text, held_out = _corpus()
    device = Autodiff(NdArray()).device()
    device.seed(0)
    model = _language_model(device, layers, d, seq)
    optim = AdamConfig().init()
    criterion = CrossEntropyLossConfig().init(device)
    rng = np.random.default_rng(0)
    mask = _causal(batch, seq, device)
    start = time.perf_counter()
    for step in range(1, steps + 1):
        inputs, targets = _windows(train_text, rng, batch, seq)
        logits = model(Tensor.from_data(inputs, device), mask)
        loss = criterion(logits.reshape([-1, _VOCAB]), Tensor.from_data(targets.reshape(-1), device))
        grads = GradientsParams.from_grads(loss.backward(), model)
        model = optim.step(2e-3 if d <= 128 else 5e-4, model, grads)
        if step % 100 == 0 or step == steps:
            print(f"  step {step}: train loss {float(loss.into_scalar()):.3f}", flush=True)
    trained = time.perf_counter() - start
    model = model.valid()
    inner = model.devices()[0]
    eval_rng = np.random.default_rng(1)
    inputs, targets = _windows(held_out, eval_rng, 64, seq)
    ids = Tensor.from_data(inputs, inner)
    eval_mask = _causal(64, seq, inner)
    reference = model(ids, eval_mask).argmax(2).to_data().to_numpy().reshape(inputs.shape)
    accuracy = float((reference == targets).mean())
    print(
        f"transformer {layers} layers, d {d}, vocab {_VOCAB}: trained {steps} steps ({trained:.0f} s) on "
        f"{len(train_text)} bytes of docs/*.md; held-out ({len(held_out)} bytes, {targets.size} tokens): "
        f"f32 next-char accuracy {accuracy:.1%}"
    )
    folder = tempfile.mkdtemp()
    f32_size = os.path.getsize(model.save_file(os.path.join(folder, "f32"), NamedMpkFileRecorder()))
    # GPTQ's calibration: a few windows of the training text (never the held-out text)
    calibration_rng = np.random.default_rng(2)
    calibration = [
        Tensor.from_data(_windows(train_text, calibration_rng, batch, seq)[0], inner) for _ in range(8)
    ]
    variants = _variants(calibration, _causal(batch, seq, inner))
    for name, (quantize, size_bar, agreement_bar) in variants.items():
        start = time.perf_counter()
        quantized = quantize(model)
        quantize_time = time.perf_counter() - start
        size = os.path.getsize(quantized.save_file(os.path.join(folder, "q"), NamedMpkFileRecorder()))
        predicted = quantized(ids, eval_mask).argmax(2).to_data().to_numpy().reshape(inputs.shape)
        agreement = float((predicted == reference).mean())
        f32_time, q_time = _interleaved(
            lambda: model(ids, eval_mask).to_data(), lambda q=quantized: q(ids, eval_mask).to_data(), repeat
        )
        print(
            f"  {name}: next-token agreement {agreement:.2%} (bar {agreement_bar:.0%}), file "
            f"{size / f32_size:.3f}x of f32 (bar {size_bar}x), forward {q_time * 1e3:.0f} ms vs f32 "
            f"{f32_time * 1e3:.0f} ms ({f32_time / q_time:.2f}x); quantized in {quantize_time:.1f} s"
        )
    if not full and not quick:
        _size_rows(NdArray().device(), folder, seq)


_VOCAB = 128  # ASCII bytes (others map to 127); 128 is a multiple of the 4-bit block size


def _variants(calibration: list[Any], mask: Any) -> dict[str, tuple[Callable[[Any], Any], float, float]]:
    """The quantized rows: name -> (model -> quantized model, file-size bar, agreement bar). The GPTQ
    rows calibrate on the token batches ``calibration`` (with the causal ``mask`` of their shape)."""
    from burn_backend.quantization import QuantParam, QuantScheme, QuantStore, QuantValue
    from burn_nn import Calibration, ModuleMapper, Param, Quantizer, quantize_weights_gptq

    int8 = Quantizer(Calibration.MinMax, QuantScheme())
    int8_blocks = Quantizer(Calibration.MinMax, QuantScheme().with_block_size(64).with_param(QuantParam.F16))
    four_bit = (
        QuantScheme()
        .with_value(QuantValue.Q4F)
        .with_block_size(32)
        .with_param(QuantParam.F16)
        .with_store(QuantStore.PACKED_U32)
    )
    q4 = Quantizer(Calibration.MinMax, four_bit)
    int8_b32 = Quantizer(Calibration.MinMax, QuantScheme().with_block_size(32).with_param(QuantParam.F16))

    class Mixed(ModuleMapper):
        """4-bit for the encoder's weight matrices, int8 blocks of 32 for the rest (embeddings, head,
        norms, biases)."""

        def map_float_with_path(self, path: Any, param: Any) -> Any:
            tensor = param.val()
            chosen = q4 if path[0] == "encoder" and tensor.rank == 2 else int8_b32
            quantized = chosen.quantize(tensor, ".".join(path))
            return Param.initialized(quantized, id=param.id, require_grad=False)

    class AllButEncoderMatrices(ModuleMapper):
        """int8 blocks of 32 for everything but the encoder's weight matrices (left to GPTQ)."""

        def map_float_with_path(self, path: Any, param: Any) -> Any:
            if path[0] == "encoder" and param.val().rank == 2:
                return param
            quantized = int8_b32.quantize(param.val(), ".".join(path))
            return Param.initialized(quantized, id=param.id, require_grad=False)

    q4_min_error = Quantizer(Calibration.MinError, four_bit)

    def gptq(model: Any, mixed: bool) -> Any:
        start = model.map(AllButEncoderMatrices()) if mixed else model
        return quantize_weights_gptq(start, q4_min_error, calibration, forward=lambda m, ids: m(ids, mask))

    return {
        "int8 (one f32 scale per tensor)": (lambda m: m.quantize_weights(int8), 0.27, 0.99),
        "int8 (blocks of 64, f16 scales)": (lambda m: m.quantize_weights(int8_blocks), 0.27, 0.99),
        "4-bit q4f (blocks of 32, f16 scales, packed)": (lambda m: m.quantize_weights(q4), 0.16, 0.95),
        "4-bit encoder matrices, int8 blocks of 32 elsewhere": (lambda m: m.map(Mixed()), 0.16, 0.95),
        "GPTQ 4-bit q4f, min-error scales (blocks of 32, f16 scales, packed)": (
            lambda m: gptq(m, False),
            0.16,
            0.95,
        ),
        "GPTQ 4-bit encoder matrices, min-error scales, int8 blocks of 32 elsewhere": (
            lambda m: gptq(m, True),
            0.16,
            0.95,
        ),
    }


def _size_rows(device: Any, folder: str, seq: int) -> None:
    """The record file sizes of the untrained 6-layer d-512 model, quantized, against its f32 file."""
    import os

    from burn_backend import Tensor
    from burn_record import NamedMpkFileRecorder

    device.seed(0)
    model = _language_model(device, 6, 512, seq)
    f32_size = os.path.getsize(model.save_file(os.path.join(folder, "f32"), NamedMpkFileRecorder()))
    # sizes do not depend on the values: one small calibration batch for the GPTQ rows
    ids = Tensor.from_data(np.zeros((1, seq), dtype=np.int64), device)
    for name, (quantize, size_bar, _) in _variants([ids], _causal(1, seq, device)).items():
        quantized = quantize(model)
        size = os.path.getsize(quantized.save_file(os.path.join(folder, "q"), NamedMpkFileRecorder()))
        print(
            f"  6 layers, d 512 (untrained) {name}: file {size / f32_size:.3f}x of f32 "
            f"({size / 1e6:.1f} MB of {f32_size / 1e6:.1f} MB; bar {size_bar}x)"
        )


def _corpus() -> tuple[np.ndarray, np.ndarray]:
    """The bytes of the repo's docs/**/*.md (sorted by path, non-ASCII as 127): the files of every
    tenth path are held out, the others are the training text."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "docs"
    paths = sorted(root.rglob("*.md"))
    if len(paths) < 10:
        raise SystemExit(f"bench_quant: expected the docs' Markdown under {root}, found {len(paths)} files")
    train: list[np.ndarray] = []
    held: list[np.ndarray] = []
    for index, path in enumerate(paths):
        data = np.frombuffer(path.read_bytes(), dtype=np.uint8)
        (held if index % 10 == 0 else train).append(np.minimum(data, _VOCAB - 1))
    return np.concatenate(train), np.concatenate(held)


def _windows(
    text: np.ndarray, rng: np.random.Generator, batch: int, seq: int
) -> tuple[np.ndarray, np.ndarray]:
    """``batch`` random windows of ``seq`` tokens and the tokens that follow each position."""
    starts = rng.integers(0, len(text) - seq - 1, batch)
    inputs = np.stack([text[s : s + seq] for s in starts]).astype(np.int64)
    targets = np.stack([text[s + 1 : s + seq + 1] for s in starts]).astype(np.int64)
    return inputs, targets


def _causal(batch: int, seq: int, device: Any) -> Any:
    from burn_nn import generate_autoregressive_mask

    return generate_autoregressive_mask(batch, seq, device)


def _language_model(device: Any, layers: int, d: int, seq: int) -> Any:
    from burn_backend import Tensor
    from burn_nn import (
        EmbeddingConfig,
        LinearConfig,
        Module,
        TransformerEncoderConfig,
        TransformerEncoderInput,
    )

    class CharLm(Module):
        def __init__(self) -> None:
            self.embed = EmbeddingConfig(_VOCAB, d).init(device)
            self.position = EmbeddingConfig(seq, d).init(device)
            self.encoder = TransformerEncoderConfig(
                d_model=d, d_ff=4 * d, n_heads=8, n_layers=layers, dropout=0.0, norm_first=True
            ).init(device)
            self.head = LinearConfig(d, _VOCAB).init(device)

        def forward(self, ids: Tensor, mask: Tensor) -> Tensor:
            batch, length = ids.dims()
            positions = Tensor.from_data(np.tile(np.arange(length), (batch, 1)), ids.device)
            x = self.embed(ids) + self.position(positions)
            return self.head(self.encoder(TransformerEncoderInput(x).mask_attn(mask)))

    return CharLm()


def _interleaved(
    first: Callable[[], object], second: Callable[[], object], repeat: int
) -> tuple[float, float]:
    """The median times of ``first`` and ``second``, run in turns (both see the same load) after a
    warm-up call each."""
    first()
    second()
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for function, into in ((first, times[0]), (second, times[1])):
            start = time.perf_counter()
            function()
            into.append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


if __name__ == "__main__":
    main()
