"""Recorders (saving and loading module, optimizer and scheduler state): the public API of
``burn-record`` (``burn_record``), and with the ``import`` extra burn-import's recorders of PyTorch and
safetensors files (``PyTorchFileRecorder``, ``SafetensorsFileRecorder``, ``LoadArgs``), as in Burn.

Needs the ``record`` extra: ``pip install 'burn-py[record]'``.
"""

try:
    from burn_record import *  # noqa: F403
    from burn_record import __all__ as __all__
except ModuleNotFoundError as error:
    from ._reexport import raise_missing_extra

    raise_missing_extra(error, "burn_record", "record", __name__)

try:
    from burn_import import LoadArgs as LoadArgs
    from burn_import import PyTorchFileRecorder as PyTorchFileRecorder
    from burn_import import SafetensorsFileRecorder as SafetensorsFileRecorder
except ModuleNotFoundError as error:  # burn-import is the ``import`` extra: without it, burn_record's names
    if error.name != "burn_import":
        raise
else:
    __all__ = [*__all__, "PyTorchFileRecorder", "SafetensorsFileRecorder", "LoadArgs"]
