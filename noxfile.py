"""The whole development matrix of the monorepo, in one place.

``nox -l`` lists the sessions. Every session makes its own virtual environment with uv and installs
what it needs from this checkout (editable), never a ``burn*`` distribution from a registry; after
installing, each session checks that and fails otherwise.

- ``lint``: ruff check and ruff format --check.
- ``typecheck``: mypy (strict) on every package.
- ``tests(package, backend)``: one package's tests, with ``BURN_DEVICE`` set to the backend.
- ``conformance(backend)``: the backend conformance suite (``burn_backend.testing``) on one backend.
- ``suite``: every package's tests, the cross-package tests and the conformance suite on every CPU
  backend and on the Array API example backend, in one pytest run: what CI runs (with lint and
  typecheck, as ``nox -t ci``).
- ``build``: every wheel and sdist into ``dist/``, with their metadata checked.
- ``guide``: the main job: training the Burn Book's guide model on MNIST (examples/guide).
- ``record_fuzz``: burn-record's fuzz test at full length (CI runs a seeded subset).
- ``bench``: the benchmarks under ``tools/bench/``.
- ``docs``: the mkdocs site, built strictly (with lint, typecheck and suite, part of ``nox -t ci``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nox
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

nox.needs_version = ">=2025.2.9"
nox.options.default_venv_backend = "uv"
nox.options.error_on_missing_interpreters = True
nox.options.sessions = ["lint", "typecheck", "suite"]

ROOT = Path(__file__).parent
DIST = ROOT / "dist"
CHECK_LOCAL_INSTALL = str(ROOT / "tools" / "release" / "check_local_install.py")
CHECK_DISTS = str(ROOT / "tools" / "release" / "check_dists.py")

TEST_REQUIREMENTS = ["pytest>=8"]
MAIN_JOB = ROOT / "examples" / "guide" / "main.py"
TORCH = "torch==2.13.0"  # the reference for numerics, where a local CPU build is available
SAFETENSORS = "safetensors>=0.4"  # a reference of tools/bench/bench_record.py only
# burn-import's references: the ONNX node tests and exporters, onnxruntime, a BERT from transformers
IMPORT_TEST_REQUIREMENTS = [
    "onnx>=1.17", "onnxruntime>=1.18", "onnxscript>=0.2", "safetensors>=0.4", "transformers>=4.40",
]  # fmt: skip

# The site: mkdocs, its Material theme, and mkdocstrings with its Python handler for the API reference
# (which formats the signatures it shows with ruff)
DOCS_REQUIREMENTS = [
    "mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings>=1.0", "mkdocstrings-python>=2.0", "ruff>=0.6",
]  # fmt: skip

# burn-train's references: scikit-learn's metrics, and Pillow for ImageFolderDataset (its vision extra)
TRAIN_TEST_REQUIREMENTS = ["scikit-learn>=1.4", "pillow>=10"]

# Each word of a backend stack name ("autodiff-ndarray") is installed from one package folder.
STACK_PART_FOLDER = {
    "ndarray": "ndarray-backend",
    "cuda": "cuda-backend",
    "autodiff": "autodiff",
    "fusion": "fusion",
    "router": "router",
}

# The backends each package's tests run against (the decorators join as they land).
TEST_MATRIX = {
    "backend-core": ["ndarray"],
    "ndarray-backend": ["ndarray"],
    "cuda-backend": ["cuda"],
    "autodiff": ["autodiff-ndarray"],
    "fusion": ["autodiff-ndarray"],  # the fusion tests use Autodiff(Fusion(NdArray())) too
    "router": ["autodiff-ndarray"],
    "nn": ["autodiff-ndarray", "fusion-ndarray", "autodiff-fusion-ndarray"],
    "record": ["ndarray"],
    "train": ["autodiff-ndarray", "autodiff-fusion-ndarray"],
    "import": ["ndarray", "fusion-ndarray"],
    "burn": ["ndarray"],
    "remote": ["autodiff-ndarray"],  # its tests start NdArray servers and compose Autodiff, Router, Fusion
}
# Package folders a package's tests need beyond its own closure and its backend's stack.
TEST_EXTRA_FOLDERS = {"remote": ["router", "fusion"]}
CONFORMANCE_BACKENDS = [
    "ndarray", "autodiff-ndarray", "router[ndarray,ndarray]", "autodiff-router[ndarray,ndarray]",
    "cuda", "autodiff-cuda", "router[cuda,ndarray]", "autodiff-router[cuda,ndarray]",
    "fusion-ndarray", "autodiff-fusion-ndarray",
]  # fmt: skip
CPU_BACKENDS = [
    "ndarray", "autodiff-ndarray", "router[ndarray,ndarray]", "autodiff-router[ndarray,ndarray]",
    "fusion-ndarray", "autodiff-fusion-ndarray",
]  # fmt: skip
# The worked example of docs/advanced/writing-a-backend.md, a backend over the Array API standard's reference
# namespace: importable from backend-core's tests folder, and run through the conformance suite in CI.
ARRAY_API_BACKEND = "array_api_backend:ArrayApiStrict()"
ARRAY_API_BACKEND_PATH = str(ROOT / "packages" / "backend-core" / "tests")
ARRAY_API_STRICT = "array-api-strict>=2.6"
# absolute paths, so that --pyargs never mistakes them for importable modules
TEST_DIRS = [str(ROOT / "tests"), *(str(p) for p in sorted((ROOT / "packages").glob("*/tests")))]


@dataclass
class Package:
    """One package folder under ``packages/``, read from its pyproject.toml."""

    folder: str
    distribution: str
    import_name: str
    requirements: list[Requirement]
    extras: dict[str, list[Requirement]] = field(default_factory=dict)


def read_packages() -> dict[str, Package]:
    """Every package of the checkout, by folder name."""
    packages = {}
    for pyproject in sorted((ROOT / "packages").glob("*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text())["project"]
        wheel = tomllib.loads(pyproject.read_text())["tool"]["hatch"]["build"]["targets"]["wheel"]
        packages[pyproject.parent.name] = Package(
            folder=pyproject.parent.name,
            distribution=canonicalize_name(project["name"]),
            import_name=Path(wheel["packages"][0]).name,
            requirements=[Requirement(r) for r in project.get("dependencies", [])],
            extras={
                name: [Requirement(r) for r in reqs]
                for name, reqs in project.get("optional-dependencies", {}).items()
            },
        )
    return packages


PACKAGES = read_packages()
FOLDER_OF = {package.distribution: folder for folder, package in PACKAGES.items()}


def local_closure(wanted: list[tuple[str, frozenset[str]]]) -> dict[str, set[str]]:
    """The package folders that installing ``wanted`` (folder, extras) needs, with their extras."""
    needed: dict[str, set[str]] = {}
    seen: set[tuple[str, frozenset[str]]] = set()
    stack = list(wanted)
    while stack:
        folder, extras = stack.pop()
        if (folder, extras) in seen:
            continue
        seen.add((folder, extras))
        needed.setdefault(folder, set()).update(extras)
        package = PACKAGES[folder]
        requirements = list(package.requirements)
        for extra in extras:
            requirements += package.extras[extra]
        for requirement in requirements:
            local = FOLDER_OF.get(canonicalize_name(requirement.name))
            if local is not None:
                stack.append((local, frozenset(requirement.extras)))
    return needed


def install_local(session: nox.Session, *specs: str, extra_requirements: list[str] = ()) -> None:
    """Install package folders (``"nn"``, ``"burn[all]"``: folder names, so ``burn`` is ``packages/burn``,
    the meta-package distributed as ``burn-py``) and every local package they need, editable.

    All local packages go into one install command, so the resolver takes each ``burn*`` requirement
    from the checkout; the installed distributions are then checked to have come from here.
    """
    wanted = []
    for spec in specs:
        requirement = Requirement(spec)
        wanted.append((requirement.name, frozenset(requirement.extras)))
    args = []
    for folder, extras in sorted(local_closure(wanted).items()):
        suffix = f"[{','.join(sorted(extras))}]" if extras else ""
        args += ["-e", f"{ROOT / 'packages' / folder}{suffix}"]
    session.install(*args, *extra_requirements, env=uv_environment())
    session.run("python", CHECK_LOCAL_INSTALL, str(ROOT))


def skip_without_gpu(session: nox.Session, backend: str) -> None:
    """GPU sessions skip, with the reason, on a machine without an NVIDIA GPU (CI has none)."""
    if "cuda" in stack_parts(backend) and shutil.which("nvidia-smi") is None:
        session.skip(f"backend {backend!r} needs an NVIDIA GPU, and this machine has none (no nvidia-smi)")


def stack_parts(backend: str) -> list[str]:
    """The backend names in a stack such as ``autodiff-router[cuda,ndarray]:0``: the decorators', and
    the inner stacks' of a backend over several."""
    words = re.split(r"[-\[\],]", backend.split(":")[0])
    return sorted({word for word in words if word})


def stack_folders(backend: str) -> list[str]:
    """The package folders a backend stack name such as ``autodiff-ndarray:0`` needs."""
    return [STACK_PART_FOLDER[part] for part in stack_parts(backend)]


def uv_environment() -> dict[str, str]:
    """Environment for uv: pip's configured find-links (local wheels such as PyTorch's CPU build)."""
    links = os.environ.get("PIP_FIND_LINKS", "")
    if not links:
        try:
            listing = subprocess.run(
                [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
            ).stdout
        except OSError:
            listing = ""
        for line in listing.splitlines():
            key, _, value = line.partition("=")
            if key.endswith(".find-links"):
                links = value.strip("'\"")
    return {"UV_FIND_LINKS": links.replace(" ", ",")} if links else {}


def find_links() -> list[Path]:
    """The local wheel folders pip is configured with."""
    links = uv_environment().get("UV_FIND_LINKS", "")
    return [Path(link) for link in links.split(",") if link and Path(link).is_dir()]


def reference_requirements() -> list[str]:
    """PyTorch for the numeric comparisons, when a local CPU wheel of it can be installed.

    PyPI's default PyTorch build carries several GB of CUDA libraries; without a local CPU wheel the
    tests that compare against PyTorch skip and the NumPy references still run.
    """
    version = TORCH.split("==")[1]
    python_tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
    for folder in find_links():
        if any(python_tag in wheel.name for wheel in folder.glob(f"torch-{version}*.whl")):
            return [TORCH]
    return []


@nox.session(tags=["ci"])
def lint(session: nox.Session) -> None:
    """Ruff's lint rules and formatting over the whole tree."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(tags=["ci"])
def typecheck(session: nox.Session) -> None:
    """mypy, strict, over every package's source."""
    # onnx is burn-import's extra: its types are checked where burn_import.onnx reads models
    install_local(session, "burn[all]", extra_requirements=["mypy>=1.10", "onnx>=1.17", *TEST_REQUIREMENTS])
    modules = [arg for package in PACKAGES.values() for arg in ("-p", package.import_name)]
    session.run("mypy", *modules, *session.posargs)


@nox.session
@nox.parametrize(
    ("package", "backend"),
    [(package, backend) for package, backends in TEST_MATRIX.items() for backend in backends],
)
def tests(session: nox.Session, package: str, backend: str) -> None:
    """One package's tests, on one backend (``BURN_DEVICE``)."""
    skip_without_gpu(session, backend)
    requirements = TEST_REQUIREMENTS + reference_requirements()
    if package == "backend-core":
        requirements.append(ARRAY_API_STRICT)
    if package == "import":
        requirements += IMPORT_TEST_REQUIREMENTS
    if package == "train":
        requirements += TRAIN_TEST_REQUIREMENTS
    extra_folders = TEST_EXTRA_FOLDERS.get(package, [])
    install_local(session, package, *stack_folders(backend), *extra_folders, extra_requirements=requirements)
    tests_dir = ROOT / "packages" / package / "tests"
    session.run("pytest", str(tests_dir), *session.posargs, env={"BURN_DEVICE": backend})


@nox.session
@nox.parametrize("backend", CONFORMANCE_BACKENDS)
def conformance(session: nox.Session, backend: str) -> None:
    """The backend conformance suite on one backend."""
    skip_without_gpu(session, backend)
    requirements = TEST_REQUIREMENTS + reference_requirements()
    install_local(session, "backend-core", *stack_folders(backend), extra_requirements=requirements)
    session.run(
        "pytest", "--pyargs", "burn_backend.testing", "--backend", backend, *session.posargs,
        env={"BURN_DEVICE": backend},
    )  # fmt: skip


@nox.session(tags=["ci"])
def suite(session: nox.Session) -> None:
    """Everything CI tests, in one pytest run: packages, cross-package tests, conformance per backend (the
    CPU backends and the Array API example backend)."""
    requirements = [*TEST_REQUIREMENTS, ARRAY_API_STRICT, *reference_requirements()]
    requirements += IMPORT_TEST_REQUIREMENTS + TRAIN_TEST_REQUIREMENTS
    install_local(session, "burn[all]", extra_requirements=requirements)
    backends = [arg for backend in [*CPU_BACKENDS, ARRAY_API_BACKEND] for arg in ("--backend", backend)]
    session.run(
        "pytest", "--pyargs", "burn_backend.testing", *TEST_DIRS, *backends, *session.posargs,
        env={"BURN_DEVICE": CPU_BACKENDS[0], "PYTHONPATH": ARRAY_API_BACKEND_PATH},
    )  # fmt: skip


@nox.session
def build(session: nox.Session) -> None:
    """Every wheel and sdist into dist/; fails if any metadata names a path or URL dependency."""
    shutil.rmtree(DIST, ignore_errors=True)
    session.install("uv", "packaging")
    for package in PACKAGES.values():
        session.run("uv", "build", "--quiet", "--out-dir", str(DIST), str(ROOT / "packages" / package.folder))
    session.run("python", CHECK_DISTS, str(DIST), *(p.distribution for p in PACKAGES.values()))

    # A backend author installs burn-backend-core alone: it must pull in its declared dependencies only.
    core = PACKAGES["backend-core"]
    (core_wheel,) = DIST.glob(core.distribution.replace("-", "_") + "-*.whl")
    venv = Path(session.create_tmp()) / "core-only"
    session.run("uv", "venv", "--quiet", str(venv))
    python = str(venv / "bin" / "python")
    session.run("uv", "pip", "install", "--quiet", "--python", python, str(core_wheel), env=uv_environment())
    frozen = session.run("uv", "pip", "freeze", "--quiet", "--python", python, silent=True) or ""
    installed = {canonicalize_name(Requirement(line).name) for line in frozen.splitlines() if line.strip()}
    declared = {core.distribution} | {canonicalize_name(r.name) for r in core.requirements}
    if installed != declared:
        session.error(
            f"installing {core_wheel.name} alone installed {sorted(installed)}, not {sorted(declared)}"
        )
    session.log(f"{core_wheel.name} alone installs: {', '.join(sorted(installed))}")


@nox.session
def guide(session: nox.Session) -> None:
    """The main job: training the Burn Book's guide model on MNIST (arguments after ``--`` go to
    examples/guide/main.py, e.g. ``-- --device autodiff-cuda``)."""
    install_local(session, "burn[all]")
    session.run("python", str(MAIN_JOB), *session.posargs)


@nox.session
def record_fuzz(session: nox.Session) -> None:
    """burn-record's fuzz test at full length: 20,000 mutated record files (CI runs a seeded subset of
    3,000). Arguments after ``--`` go to pytest; ``BURN_RECORD_FUZZ_SEED`` picks another seed."""
    install_local(session, "record", "nn", "ndarray-backend", extra_requirements=TEST_REQUIREMENTS)
    session.run(
        "pytest", str(ROOT / "packages" / "record" / "tests" / "test_fuzz.py"), *session.posargs,
        env={"BURN_RECORD_FUZZ_CASES": "20000", "BURN_DEVICE": "ndarray"},
    )  # fmt: skip


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmarks of tools/bench/, each printing its ratio against the reference it competes with."""
    install_local(session, "burn[all]", extra_requirements=[TORCH, SAFETENSORS])
    session.run("python", str(ROOT / "tools" / "bench" / "run.py"), *session.posargs)


@nox.session(tags=["ci"])
def docs(session: nox.Session) -> None:
    """The documentation site, built with mkdocs in strict mode into site/ (arguments after ``--`` go to
    ``mkdocs build``).

    The API reference is rendered by mkdocstrings from the packages' source by static analysis (griffe
    imports nothing), so no package of the checkout is installed here. The examples of the pages run in
    the suite (tests/test_docs_examples.py), where every package is.
    """
    session.install(*DOCS_REQUIREMENTS)
    session.run("mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"), *session.posargs)
