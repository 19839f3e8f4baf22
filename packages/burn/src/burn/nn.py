"""Modules, layers and losses: the public API of `burn-nn`.

Needs the `nn` extra: `pip install 'burn[nn]'`.
"""

from ._reexport import reexport

reexport(globals(), "burn_nn", "nn")
