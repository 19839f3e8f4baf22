"""Optimizers and learning-rate schedulers: ``burn_nn.optim``.

Needs the ``nn`` extra: ``pip install 'burn-py[nn]'``.
"""

try:
    from burn_nn.optim import *  # noqa: F403
    from burn_nn.optim import __all__ as __all__
except ModuleNotFoundError as error:
    from ._reexport import raise_missing_extra

    raise_missing_extra(error, "burn_nn.optim", "nn", __name__)
