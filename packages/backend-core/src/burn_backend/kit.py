"""Helpers for backend authors: what every implementation of the backend interface shares.

This module is for writing a backend (or a backend decorator), not for using one: import it by name,
``from burn_backend import kit``; nothing here is re-exported by ``burn_backend`` or by the ``burn``
meta-package. It holds

- the interface listing: ``interface_methods()``, every method a backend implements, by name (what a
  decorator wraps and what the conformance suite's coverage and signature checks go through);
- indexing: ``canonical_slices``, which turns the user's ranges into the in-range Python slices that the
  ``*_slice`` ops receive, and ``slice_length``, the number of elements one of them selects;
- the output sizes of convolutions and pooling (``conv_output_size``, ``conv_transpose_output_size``,
  ``pool_output_size``) and the tables every implementation of pooling and interpolation must agree on
  (``avg_pool_divisors``, ``adaptive_pool_windows``, ``nearest_indices``, ``interpolation_taps``), so a
  new backend computes exactly the shapes and weights that ``burn_backend.module`` checks against;
- ``BackendDecorator``: the base of a backend that wraps another one (Autodiff, Fusion, Router):
  delegation of what it does not define, wrapping and unwrapping of primitives, the inner backend's
  devices, stack name, capabilities and conformance exclusions;
- the element-wise op table ``ELEMENTWISE_OPS`` (``ElementwiseOp`` entries: name, operands, result
  kind, expression, NumPy reference; ``EXPRESSION_FUNCTIONS``, the functions expressions call), from
  which generated kernels, the fusion IR and the conformance references read;
- the IR of the fusion compile hook (``Backend.compile_elementwise``): ``ElementwiseBlock`` of
  ``ElementwiseStep`` over inputs described by ``TensorSpec``, the ``ElementwisePlan`` a compiler
  returns (whose outputs may be ``Deferred``: primitives made when read, by ``resolved``), and
  ``run_op_by_op``, what runs a block where there is no plan; the blocks a compiler with the
  ``compile_fused`` hook (``FUSED_HOOK``) also receives: ``ReduceBlock`` (``ReduceStep``, ``REDUCE_OPS``;
  ``row_program`` cuts one into the loops over its rows that a compiler renders, ``RowProgram`` of
  ``RowLoop``), ``MatmulBlock``, casts (``CastStep``, ``CAST_OPS``), ``GivenUp`` inputs a plan may
  overwrite, ``run_fused_op_by_op``, and ``FUSED_BLOCK_KINDS``, the kinds a compiler may take on;
- the step-capture hook ``step_capture(device)`` (``CAPTURE_HOOK``): the ``StepCapture`` a backend that
  can record a step's device work and replay it returns (CUDA graphs on burn-cuda), and
  ``CaptureError``, what its ``record`` raises where the work cannot be recorded;
- ``register_dtype``: makes ``DType.of`` read the dtype objects of an array library other than NumPy,
  so that a backend's primitives may carry them (``burn_backend.array.ArrayRuntime`` registers its
  namespace's);
- ``ENTRY_POINT_GROUP``: the entry-point group (``"burn.backends"``) under which an installed backend
  announces itself, so that ``BURN_DEVICE`` and device specs can name it.

Example:
    >>> from burn_backend import kit
    >>> kit.conv_output_size(32, kernel=3, stride=1, padding=1, dilation=1)
    32
    >>> kit.canonical_slices("slice", [4, 5], [1, slice(-2, None)])
    (slice(1, 2, 1), slice(3, 5, 1))
    >>> "float_add" in kit.interface_methods()
    True
"""

from ._backend import interface_methods as interface_methods
from ._capture import CAPTURE_HOOK as CAPTURE_HOOK
from ._capture import CaptureError as CaptureError
from ._capture import StepCapture as StepCapture
from ._decorator import BackendDecorator as BackendDecorator
from ._dtype import kind_of as kind_of
from ._dtype import register_dtype as register_dtype
from ._elementwise import ELEMENTWISE_OPS as ELEMENTWISE_OPS
from ._elementwise import EXPRESSION_FUNCTIONS as EXPRESSION_FUNCTIONS
from ._elementwise import ElementwiseOp as ElementwiseOp
from ._fusion_ir import CAST_OPS as CAST_OPS
from ._fusion_ir import FUSED_BLOCK_KINDS as FUSED_BLOCK_KINDS
from ._fusion_ir import FUSED_HOOK as FUSED_HOOK
from ._fusion_ir import REDUCE_OPS as REDUCE_OPS
from ._fusion_ir import CastStep as CastStep
from ._fusion_ir import Deferred as Deferred
from ._fusion_ir import ElementwiseBlock as ElementwiseBlock
from ._fusion_ir import ElementwisePlan as ElementwisePlan
from ._fusion_ir import ElementwiseStep as ElementwiseStep
from ._fusion_ir import FusedBlock as FusedBlock
from ._fusion_ir import GivenUp as GivenUp
from ._fusion_ir import MatmulBlock as MatmulBlock
from ._fusion_ir import ReduceBlock as ReduceBlock
from ._fusion_ir import ReduceStep as ReduceStep
from ._fusion_ir import TensorSpec as TensorSpec
from ._fusion_ir import resolved as resolved
from ._fusion_ir import run_fused_op_by_op as run_fused_op_by_op
from ._fusion_ir import run_op_by_op as run_op_by_op
from ._fusion_rows import RowLoop as RowLoop
from ._fusion_rows import RowProgram as RowProgram
from ._fusion_rows import row_program as row_program
from ._ops._sizes import adaptive_pool_windows as adaptive_pool_windows
from ._ops._sizes import avg_pool_divisors as avg_pool_divisors
from ._ops._sizes import conv_output_size as conv_output_size
from ._ops._sizes import conv_transpose_output_size as conv_transpose_output_size
from ._ops._sizes import interpolation_taps as interpolation_taps
from ._ops._sizes import nearest_indices as nearest_indices
from ._ops._sizes import pool_output_size as pool_output_size
from ._registry import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
from ._slice import canonical_slices as canonical_slices
from ._slice import slice_length as slice_length

__all__ = [
    # the interface
    "interface_methods",
    "ENTRY_POINT_GROUP",
    "register_dtype",
    "kind_of",
    # decorators
    "BackendDecorator",
    # element-wise ops and the fusion compile hook
    "ELEMENTWISE_OPS",
    "EXPRESSION_FUNCTIONS",
    "ElementwiseOp",
    "ElementwiseBlock",
    "ElementwiseStep",
    "TensorSpec",
    "Deferred",
    "ElementwisePlan",
    "run_op_by_op",
    # the fused blocks beyond element-wise chains (the ``compile_fused`` hook)
    "FUSED_HOOK",
    "FUSED_BLOCK_KINDS",
    "FusedBlock",
    "ReduceBlock",
    "ReduceStep",
    "RowLoop",
    "RowProgram",
    "row_program",
    "MatmulBlock",
    "CastStep",
    "CAST_OPS",
    "REDUCE_OPS",
    # step capture and replay (the ``step_capture`` hook)
    "CAPTURE_HOOK",
    "CaptureError",
    "StepCapture",
    "GivenUp",
    "resolved",
    "run_fused_op_by_op",
    # indexing
    "canonical_slices",
    "slice_length",
    # sizes and shared tables of module ops
    "conv_output_size",
    "conv_transpose_output_size",
    "pool_output_size",
    "avg_pool_divisors",
    "adaptive_pool_windows",
    "nearest_indices",
    "interpolation_taps",
]
