"""Loss functions, as Burn's ``burn::nn::loss``.

Each loss is a module: losses with settings come as a ``XLossConfig`` whose ``init`` builds the loss
(``CrossEntropyLossConfig(smoothing=0.1).init(device)``), the others are built directly (``MseLoss()``).
``forward`` computes the loss; the ``Reduction`` argument (or config field) chooses between the mean, the
sum and the element-wise values. ``cross_entropy`` and ``cross_entropy_with_logits`` are functional
forms (also in ``burn_nn.functional``).
"""

from ._binary_cross_entropy import BinaryCrossEntropyLoss as BinaryCrossEntropyLoss
from ._binary_cross_entropy import BinaryCrossEntropyLossConfig as BinaryCrossEntropyLossConfig
from ._cosine_embedding import CosineEmbeddingLoss as CosineEmbeddingLoss
from ._cosine_embedding import CosineEmbeddingLossConfig as CosineEmbeddingLossConfig
from ._cross_entropy import CrossEntropyLoss as CrossEntropyLoss
from ._cross_entropy import CrossEntropyLossConfig as CrossEntropyLossConfig
from ._cross_entropy import cross_entropy as cross_entropy
from ._cross_entropy import cross_entropy_with_logits as cross_entropy_with_logits
from ._kldiv import KLDivLoss as KLDivLoss
from ._kldiv import KLDivLossConfig as KLDivLossConfig
from ._reduction import Reduction as Reduction
from ._regression import HuberLoss as HuberLoss
from ._regression import HuberLossConfig as HuberLossConfig
from ._regression import MseLoss as MseLoss
from ._regression import SmoothL1Loss as SmoothL1Loss
from ._regression import SmoothL1LossConfig as SmoothL1LossConfig

__all__ = [
    "Reduction",
    # classification
    "CrossEntropyLoss",
    "CrossEntropyLossConfig",
    "BinaryCrossEntropyLoss",
    "BinaryCrossEntropyLossConfig",
    # regression
    "MseLoss",
    "HuberLoss",
    "HuberLossConfig",
    "SmoothL1Loss",
    "SmoothL1LossConfig",
    # distributions and embeddings
    "KLDivLoss",
    "KLDivLossConfig",
    "CosineEmbeddingLoss",
    "CosineEmbeddingLossConfig",
    # functional forms
    "cross_entropy",
    "cross_entropy_with_logits",
]
