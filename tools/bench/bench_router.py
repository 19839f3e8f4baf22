"""Router overhead: a tiny op through ``Router(NdArray(), ...)`` against the same op on ``NdArray()``,
and through ``Autodiff(Router(...))`` against ``Autodiff(NdArray())``; the target is at most 1 us more
per op (printed as the difference of the medians, beside the ratio).

Run: ``python tools/bench/bench_router.py [--quick]``.
"""

from __future__ import annotations

from collections.abc import Callable

from _harness import Row, arguments, compare, print_table

from burn_autodiff import Autodiff
from burn_backend import Backend, Tensor
from burn_ndarray import NdArray
from burn_router import Router

OPS_PER_CALL = 100


def adds(backend: Backend) -> Callable[[], None]:
    """``OPS_PER_CALL`` tiny float additions on ``backend``'s primitives (tracked where it has autodiff)."""
    a, b = (Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], backend.device(0)) for _ in range(2))
    if backend.ad_enabled():
        a = a.require_grad()
    lhs, rhs, add = a.primitive, b.primitive, backend.float_add

    def run() -> None:
        for _ in range(OPS_PER_CALL):
            add(lhs, rhs)

    return run


def main() -> None:
    args = arguments(__doc__ or "")
    repeat = 5 if args.quick else 15
    cases = [
        ("add [2, 2]: Router(NdArray(), NdArray(f64))", Router(NdArray(), NdArray(float_dtype="f64")),
         NdArray()),
        ("add [2, 2]: Autodiff(Router(NdArray()))", Autodiff(Router(NdArray())), Autodiff(NdArray())),
    ]  # fmt: skip
    rows: list[Row] = [
        compare(label, adds(routed), adds(plain), "inner", "<= +1 us per op", repeat, 50)
        for label, routed, plain in cases
    ]
    print_table(f"Router overhead ({OPS_PER_CALL} ops per call; ratio = router time / inner backend's)", rows)
    for row in rows:
        extra = (row.ours - row.reference) / OPS_PER_CALL * 1e6
        print(f"{row.name}: {extra:+.2f} us per op through the router")


if __name__ == "__main__":
    main()
