"""Quantized tensors (as Burn's ``testgen_quantization``): schemes, round trips, the ``q_*`` ops."""
