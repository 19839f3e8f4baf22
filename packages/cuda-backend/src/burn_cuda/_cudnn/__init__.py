"""cuDNN for burn-cuda's convolutions and its f16/bf16 attention, through NVIDIA's cuDNN frontend (the
``cudnn`` extras).

Used where the frontend loads, the backend allows it (``Cuda(cudnn=...)``, ``BURN_CUDA_CUDNN``) and
cuDNN has a plan for the case; everything else keeps burn-cuda's own kernels (``burn_cuda._ops._conv``,
``burn_cuda._ops._attention_kernels``).
"""

from ._attention import ATTENTION_PLANS as ATTENTION_PLANS
from ._attention import attention as attention
from ._attention import attention_backward as attention_backward
from ._attention import attention_served as attention_served
from ._conv import FUSED as FUSED
from ._conv import PLANS as PLANS
from ._conv import convolve as convolve
from ._conv import convolve_adjoint as convolve_adjoint
from ._conv import convolve_weight_grad as convolve_weight_grad
from ._library import LOG as LOG
from ._library import enabled_by_environment as enabled_by_environment
from ._library import unavailable_reason as unavailable_reason
