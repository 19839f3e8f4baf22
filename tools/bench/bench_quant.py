"""Quantized matmul on the CPU, side by side: NdArray's int8 GEMM (int32 accumulation) against NumPy's
f32 ``@`` at 1024^3, medians of several runs and their ratio (issue 41's bar: >= 1.0x).

Run: ``python tools/bench/bench_quant.py [--size 1024] [--repeat 5]``.
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


if __name__ == "__main__":
    main()
