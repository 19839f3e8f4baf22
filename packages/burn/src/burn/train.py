"""Training (the learner, metrics, checkpointing): the public API of ``burn-train`` (``burn_train``).

Needs the ``train`` extra: ``pip install 'burn-py[train]'``.
"""

try:
    from burn_train import *  # noqa: F403
    from burn_train import __all__ as __all__
except ModuleNotFoundError as error:
    from ._reexport import raise_missing_extra

    raise_missing_extra(error, "burn_train", "train", __name__)
