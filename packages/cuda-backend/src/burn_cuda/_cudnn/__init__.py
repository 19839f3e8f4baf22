"""cuDNN for burn-cuda's convolutions, through NVIDIA's cuDNN frontend (the ``cudnn`` extras).

Used where the frontend loads, the backend allows it (``Cuda(cudnn=...)``, ``BURN_CUDA_CUDNN``) and
cuDNN has a plan for the case; everything else keeps burn-cuda's own kernels (``burn_cuda._ops._conv``).
"""

from ._conv import FUSED as FUSED
from ._conv import PLANS as PLANS
from ._conv import convolve as convolve
from ._conv import convolve_adjoint as convolve_adjoint
from ._conv import convolve_weight_grad as convolve_weight_grad
from ._library import LOG as LOG
from ._library import enabled_by_environment as enabled_by_environment
from ._library import unavailable_reason as unavailable_reason
