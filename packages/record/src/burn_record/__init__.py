"""Recorders for Burn for Python: save and load module, optimizer, scheduler and any other state.

A recorder is a file format with precision settings (Burn's ``burn::record``): ``NamedMpkFileRecorder``
(the default: MessagePack with field names), ``NamedMpkZstFileRecorder`` (the same, zstandard-compressed),
``BinFileRecorder`` (compact), ``PrettyJsonFileRecorder`` (readable), in-memory ``...BytesRecorder``
forms, and Burn's aliases ``DefaultRecorder`` and ``CompactRecorder``. ``FullPrecisionSettings``,
``HalfPrecisionSettings`` and ``DoublePrecisionSettings`` choose the stored dtypes. Files are
self-describing, checksummed and written atomically; loading executes nothing and raises
``RecordFileError`` for anything but a whole, undamaged record. The package README specifies the file
format.

Example:
    >>> from burn_record import NamedMpkFileRecorder, FullPrecisionSettings
    >>> recorder = NamedMpkFileRecorder(FullPrecisionSettings())
    >>> model.save_file("artifacts/model", recorder)
    PosixPath('artifacts/model.mpk')
    >>> model = model.load_file("artifacts/model", recorder, device)
"""

from burn_backend import ParamId as ParamId
from burn_backend import ParamRecord as ParamRecord
from burn_backend import Recorder as Recorder

from ._errors import PrecisionError as PrecisionError
from ._errors import RecordFileError as RecordFileError
from ._errors import RecordLimits as RecordLimits
from ._format import FORMAT_VERSION as FORMAT_VERSION
from ._precision import DoublePrecisionSettings as DoublePrecisionSettings
from ._precision import FullPrecisionSettings as FullPrecisionSettings
from ._precision import HalfPrecisionSettings as HalfPrecisionSettings
from ._precision import PrecisionSettings as PrecisionSettings
from ._recorders import BinBytesRecorder as BinBytesRecorder
from ._recorders import BinFileRecorder as BinFileRecorder
from ._recorders import BytesRecorder as BytesRecorder
from ._recorders import CompactRecorder as CompactRecorder
from ._recorders import DefaultFileRecorder as DefaultFileRecorder
from ._recorders import DefaultRecorder as DefaultRecorder
from ._recorders import FileRecorder as FileRecorder
from ._recorders import NamedMpkBytesRecorder as NamedMpkBytesRecorder
from ._recorders import NamedMpkFileRecorder as NamedMpkFileRecorder
from ._recorders import NamedMpkZstBytesRecorder as NamedMpkZstBytesRecorder
from ._recorders import NamedMpkZstFileRecorder as NamedMpkZstFileRecorder
from ._recorders import PrettyJsonFileRecorder as PrettyJsonFileRecorder
from ._version import __version__ as __version__

__all__ = [
    # file recorders
    "FileRecorder",
    "NamedMpkFileRecorder",
    "NamedMpkZstFileRecorder",
    "BinFileRecorder",
    "PrettyJsonFileRecorder",
    "DefaultFileRecorder",
    "DefaultRecorder",
    "CompactRecorder",
    # in-memory recorders
    "BytesRecorder",
    "BinBytesRecorder",
    "NamedMpkBytesRecorder",
    "NamedMpkZstBytesRecorder",
    # precision
    "PrecisionSettings",
    "FullPrecisionSettings",
    "HalfPrecisionSettings",
    "DoublePrecisionSettings",
    # errors and limits
    "RecordFileError",
    "PrecisionError",
    "RecordLimits",
    "FORMAT_VERSION",
    # the record vocabulary (backend-core's)
    "ParamId",
    "ParamRecord",
    "Recorder",
]
