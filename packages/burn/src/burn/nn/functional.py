"""Functional forms of the layers and losses (``pad``, ``dropout``, ``batch_norm``, ``cross_entropy``,
activations, convolutions, ...), as ``torch.nn.functional``: ``burn_nn.functional``.

Needs the ``nn`` extra: ``pip install 'burn-py[nn]'``.
"""

from burn_nn.functional import *  # noqa: F403
from burn_nn.functional import __all__ as __all__
