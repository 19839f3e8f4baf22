"""Reverse-mode automatic differentiation for any Burn for Python backend: ``Autodiff(inner)``.

Custom ops record their own backward with an ``OpSpec``, the mechanism every built-in op uses: through
``custom_op(spec, forward)``, or ``Autodiff.track`` directly.
"""

from ._backend import Autodiff as Autodiff
from ._checkpoint import BalancedCheckpointing as BalancedCheckpointing
from ._checkpoint import CheckpointStrategy as CheckpointStrategy
from ._checkpoint import NoCheckpointing as NoCheckpointing
from ._custom import custom_op as custom_op
from ._graph import AutodiffGradients as AutodiffGradients
from ._graph import AutodiffTensor as AutodiffTensor
from ._graph import OpSpec as OpSpec
from ._version import __version__ as __version__

__all__ = [
    "Autodiff",
    "AutodiffGradients",
    "AutodiffTensor",
    "BalancedCheckpointing",
    "CheckpointStrategy",
    "NoCheckpointing",
    "OpSpec",
    "custom_op",
]
