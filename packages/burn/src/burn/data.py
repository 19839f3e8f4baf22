"""Datasets and data loading: `burn_train.data`.

Needs the `train` extra: `pip install 'burn[train]'`.
"""

from ._reexport import reexport

reexport(globals(), "burn_train.data", "train")
