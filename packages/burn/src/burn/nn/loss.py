"""Loss functions: ``burn_nn.loss``.

Needs the ``nn`` extra: ``pip install 'burn-py[nn]'``.
"""

from burn_nn.loss import *  # noqa: F403
from burn_nn.loss import __all__ as __all__
