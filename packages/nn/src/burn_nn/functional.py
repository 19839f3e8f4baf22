"""Functional forms of the layers and losses, as ``torch.nn.functional``: the functions the modules are
built on, for use without a module.

Here are ``pad``, ``dropout``, ``batch_norm``, ``group_norm``, ``cross_entropy`` and
``cross_entropy_with_logits``, and, re-exported for one place to look, every activation function of
``burn_backend.activation`` (``relu``, ``softmax``, ...) and module function of ``burn_backend.module``
(``conv2d``, ``linear``, ``max_pool2d``, ``layer_norm``, ``interpolate``, ``attention``, ...).

Tensors are immutable, so ``batch_norm`` updates running statistics held in ``RunningState`` objects
where PyTorch's updates its buffers in place.

Example:
    >>> from burn_backend import Tensor
    >>> from burn_nn import functional as F
    >>> x = Tensor.from_data([[1.0, 2.0, 3.0]])
    >>> F.pad(x, (1, 1), mode="replicate").tolist()
    [[1.0, 1.0, 2.0, 3.0, 3.0]]
    >>> F.relu(x - 2.0).tolist()
    [[0.0, 0.0, 1.0]]
"""

from burn_backend.activation import *  # noqa: F403
from burn_backend.activation import __all__ as _activation_names
from burn_backend.module import *  # noqa: F403
from burn_backend.module import __all__ as _module_names

from ._dropout import dropout as dropout

# these two replace burn_backend.module's: PyTorch's arguments, extending the backend functions' ones
from ._norm_functional import batch_norm as batch_norm  # type: ignore[assignment]
from ._norm_functional import group_norm as group_norm  # type: ignore[assignment]
from .loss._cross_entropy import cross_entropy as cross_entropy
from .loss._cross_entropy import cross_entropy_with_logits as cross_entropy_with_logits

__all__ = [
    # regularization and normalization
    "dropout",
    "batch_norm",
    "group_norm",
    # losses
    "cross_entropy",
    "cross_entropy_with_logits",
    # burn_backend.module: convolution, pooling, padding, linear, attention, ... (but its batch_norm
    # and group_norm, replaced above)
    *(name for name in _module_names if name not in ("batch_norm", "group_norm")),
    # burn_backend.activation
    *_activation_names,
]
