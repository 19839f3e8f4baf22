"""Recorders: the public API of `burn-record`.

Needs the `record` extra: `pip install 'burn[record]'`.
"""

from ._reexport import reexport

reexport(globals(), "burn_record", "record")
