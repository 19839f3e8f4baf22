"""Signal functions on tensors (FFTs, short-time transforms, windows): ``burn_backend.signal``."""

from burn_backend.signal import *  # noqa: F403
from burn_backend.signal import __all__ as __all__
