"""Coordinate grids (``meshgrid``, ``affine_grid_2d``): ``burn_backend.grid``."""

from burn_backend.grid import *  # noqa: F403
from burn_backend.grid import __all__ as __all__
