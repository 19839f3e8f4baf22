"""Datasets and data loading: ``burn_train.data``.

Needs the ``train`` extra: ``pip install 'burn-py[train]'``.
"""

try:
    from burn_train.data import *  # noqa: F403
    from burn_train.data import __all__ as __all__
except ModuleNotFoundError as error:
    from ._reexport import raise_missing_extra

    raise_missing_extra(error, "burn_train.data", "train", __name__)
