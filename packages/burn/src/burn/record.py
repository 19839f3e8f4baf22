"""Recorders (saving and loading module, optimizer and scheduler state): the public API of
``burn-record`` (``burn_record``).

Needs the ``record`` extra: ``pip install 'burn-py[record]'``.
"""

try:
    from burn_record import *  # noqa: F403
    from burn_record import __all__ as __all__
except ModuleNotFoundError as error:
    from ._reexport import raise_missing_extra

    raise_missing_extra(error, "burn_record", "record", __name__)
