"""Burn for Python: one tensor API over composable backends.

``burn`` re-exports the installed packages: ``burn.tensor`` (also at the top level), ``burn.backend``,
``burn.nn`` (with ``burn.nn.loss``), ``burn.optim``, ``burn.record``, ``burn.train``, ``burn.data`` and
``burn.onnx``. Each namespace holds the public names of its package and nothing else, and each can be
imported by itself (``import burn.nn.loss``) or reached as an attribute (``burn.nn.loss``): the
namespaces load on first access. One whose package is missing raises ``ModuleNotFoundError`` naming the
extra of the ``burn-py`` distribution to install.

Example:
    >>> import burn
    >>> burn.Tensor is burn.tensor.Tensor
    True
"""

from . import tensor as tensor
from ._reexport import submodule as __getattr__  # noqa: F401  (the lazy namespaces)
from ._version import __version__ as __version__
from .tensor import *  # noqa: F403  (the tensor API, re-exported by name in burn.tensor.__all__)


def __dir__() -> list[str]:
    from ._reexport import SUBMODULES

    return sorted({*globals(), *SUBMODULES})
