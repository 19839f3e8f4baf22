"""Training: the public API of `burn-train`.

Needs the `train` extra: `pip install 'burn[train]'`.
"""

from ._reexport import reexport

reexport(globals(), "burn_train", "train")
