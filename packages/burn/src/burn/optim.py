"""Optimizers and learning-rate schedulers: `burn_nn.optim`.

Needs the `nn` extra: `pip install 'burn[nn]'`.
"""

from ._reexport import reexport

reexport(globals(), "burn_nn.optim", "nn")
