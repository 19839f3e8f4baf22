"""Quantized matmul on the CPU, side by side: NdArray's int8 GEMM (int32 accumulation) against NumPy's
f32 ``@`` at 1024^3, medians of several runs and their ratio (issue 41's bar: >= 1.0x).

Run: ``python tools/bench/bench_quant.py [--size 1024] [--repeat 5] [--modules [--quick]]``; ``--modules``
adds the quantized transformer rows (file size, next-token agreement, forward time).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from burn_ndarray._ops._quant import gemm_i8


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--modules", action="store_true", help="also the quantized transformer rows")
    parser.add_argument("--quick", action="store_true", help="a 2-layer d-128 transformer (small machines)")
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
        transformer_rows(args.quick)


def transformer_rows(quick: bool) -> None:
    """Issue 41's module rows: a 6-layer transformer (d 512; ``--quick``: 2 layers, d 128) with random
    weights and a random embedding and head, quantized to int8 and to 4-bit blocks of 32 (packed): record
    file size against the f32 file, next-token agreement (argmax) with the f32 model on random token
    sequences, and CPU forward time."""
    import os
    import tempfile

    from burn_backend import Tensor
    from burn_backend.quantization import QuantScheme, QuantStore, QuantValue
    from burn_ndarray import NdArray
    from burn_nn import (
        Calibration,
        EmbeddingConfig,
        LinearConfig,
        Module,
        Quantizer,
        TransformerEncoderConfig,
        TransformerEncoderInput,
    )
    from burn_record import NamedMpkFileRecorder

    layers, d, vocab, seq, batch = (2, 128, 256, 32, 4) if quick else (6, 512, 1024, 64, 8)
    device = NdArray().device()
    device.seed(0)

    class Lm(Module):
        def __init__(self) -> None:
            self.embed = EmbeddingConfig(vocab, d).init(device)
            self.encoder = TransformerEncoderConfig(d_model=d, d_ff=4 * d, n_heads=8, n_layers=layers).init(
                device
            )
            self.head = LinearConfig(d, vocab).init(device)

        def forward(self, ids: Tensor) -> Tensor:
            return self.head(self.encoder(TransformerEncoderInput(self.embed(ids))))

    model = Lm()
    ids = Tensor.from_data(np.random.default_rng(1).integers(0, vocab, (batch, seq)), device)
    folder = tempfile.mkdtemp()
    f32_size = os.path.getsize(model.save_file(os.path.join(folder, "f32"), NamedMpkFileRecorder()))
    reference = model(ids).argmax(2).to_data().to_numpy()
    f32_time = _timed(lambda: model(ids).to_data())
    schemes = {
        "int8": QuantScheme(),
        "4-bit blocks 32": QuantScheme()
        .with_value(QuantValue.Q4S)
        .with_block_size(32)
        .with_store(QuantStore.PACKED_U32),
    }
    print(f"transformer {layers} layers, d {d}, vocab {vocab}, {batch}x{seq} tokens (random weights)")
    for name, scheme in schemes.items():
        quantized = model.quantize_weights(Quantizer(Calibration.MinMax, scheme))
        size = os.path.getsize(quantized.save_file(os.path.join(folder, "q"), NamedMpkFileRecorder()))
        agreement = float((quantized(ids).argmax(2).to_data().to_numpy() == reference).mean())
        q_time = _timed(lambda q=quantized: q(ids).to_data())
        print(
            f"  {name}: file {size / f32_size:.3f}x of f32, next-token agreement {agreement:.1%}, "
            f"forward {q_time * 1e3:.0f} ms vs f32 {f32_time * 1e3:.0f} ms ({f32_time / q_time:.2f}x)"
        )


def _timed(function: object, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return statistics.median(times)


if __name__ == "__main__":
    main()
