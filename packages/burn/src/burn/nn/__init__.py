"""Modules, layers and losses: the public API of ``burn-nn`` (``burn_nn``), with its losses in
``burn.nn.loss`` and its functional forms in ``burn.nn.functional``.

Needs the ``nn`` extra: ``pip install 'burn-py[nn]'``.
"""

try:
    from burn_nn import *  # noqa: F403
    from burn_nn import __all__ as __all__
except ModuleNotFoundError as error:
    from .._reexport import raise_missing_extra

    raise_missing_extra(error, "burn_nn", "nn", __name__)

# The star import bound ``loss`` and ``functional`` to burn_nn's own modules; ``from . import`` would
# take those attributes instead of importing this namespace's ``burn.nn.loss`` and ``burn.nn.functional``.
del loss, functional  # noqa: F821
from . import functional as functional  # type: ignore[no-redef]  # noqa: E402
from . import loss as loss  # type: ignore[no-redef]  # noqa: E402
