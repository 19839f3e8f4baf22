"""The backend conformance suite: one set of tests over the ``Tensor`` API that any backend runs.

Run it with ``python -m pytest --pyargs burn_backend.testing --backend SPEC``, where SPEC is a device
spec of an installed backend (``ndarray``, ``autodiff-ndarray``, ``cuda:0``) or ``module:expression``
evaluated in that module (``burn_ndarray:NdArray()``, ``mypkg:MyBackend(option=1)``); ``--backend`` may
be given several times. The option comes from this package's pytest plugin (``-p no:burn`` disables it).

Values are checked against NumPy in float64 on random inputs, seeded from each test's name and
parameters (not from the backend's spec). A spy around the backend counts every interface method the
suite calls that returns, and ``test_zz_coverage`` fails if any never did; a signature check rejects
methods whose parameters differ from the interface. A backend class that still lacks abstract methods
runs too: each is a stub raising ``NotImplementedError``, which fails the tests that reach it. A backend
declares the tests it cannot pass in its ``conformance_exclusions`` mapping (test-id pattern -> reason,
``*`` the only wildcard); they run as strict expected failures, so an exclusion that starts passing is
reported, and a pattern that matches no test is an error. Where the interface leaves results to the
backend (an int division by zero, signed overflow, shifts past the width), the suite checks NumPy's
values in tests marked with the group (``IMPLEMENTATION_DEFINED``); a backend that differs declares the
group, ``"implementation-defined:int-division-by-zero"`` -> reason, and those tests skip for it.
``docs/advanced/writing-a-backend.md`` documents it all.
"""

from .._backend import interface_methods as interface_methods
from ._helpers import FLOAT_DTYPES as FLOAT_DTYPES
from ._helpers import INT_DTYPES as INT_DTYPES
from ._helpers import check as check
from ._helpers import make as make
from ._helpers import random_array as random_array
from ._helpers import require_dtype as require_dtype
from ._implementation_defined import IMPLEMENTATION_DEFINED as IMPLEMENTATION_DEFINED

__all__ = [
    "FLOAT_DTYPES",
    "IMPLEMENTATION_DEFINED",
    "INT_DTYPES",
    "check",
    "interface_methods",
    "make",
    "random_array",
    "require_dtype",
]
