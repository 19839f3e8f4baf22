"""The layering of the packages (DESIGN.md §2), enforced on declared dependencies and on real imports.

``LAYERS`` is the one place the allowed dependencies between our packages are written down. Two checks
read it: a package may declare (in its pyproject.toml, extras included) only the packages its layer
allows, and its source may import only what it declares. Third-party imports must be declared too, so a
package's dependency list stays its own.
"""

from __future__ import annotations

import ast
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

PACKAGES_DIR = Path(__file__).parents[1] / "packages"

CORE = "burn-backend-core"
# distribution -> the project distributions it may depend on
LAYERS: dict[str, set[str]] = {
    CORE: set(),
    "burn-ndarray": {CORE},
    "burn-cuda": {CORE},
    "burn-autodiff": {CORE},
    "burn-fusion": {CORE},
    "burn-router": {CORE},
    "burn-nn": {CORE},
    "burn-record": {CORE},
    "burn-train": {CORE, "burn-nn", "burn-record"},
    "burn-import": {CORE, "burn-nn", "burn-record"},
    "burn-remote": {CORE},
    "burn-py": {
        CORE, "burn-ndarray", "burn-cuda", "burn-autodiff", "burn-fusion", "burn-router",
        "burn-nn", "burn-record", "burn-train", "burn-import", "burn-remote", "burn-py",
    },
}  # fmt: skip

# Modules of backend-core written for backend authors (and the conformance suite): the user-facing
# namespaces of the meta-package never import them, so they re-export none of their names.
BACKEND_AUTHOR_MODULES = ("burn_backend.kit", "burn_backend.array", "burn_backend.testing")
META_PACKAGE = "burn-py"

# import names whose distribution is not the import name itself
_CUPY = {"cupy-cuda12x", "cupy-cuda13x", "cupy"}
IMPORT_DISTRIBUTIONS = {
    "cupy": _CUPY,
    "cupyx": _CUPY,  # ships in CuPy's wheel
    "PIL": {"pillow"},
    "cudnn": {"nvidia-cudnn-frontend"},  # NVIDIA's cuDNN frontend
}


@dataclass(frozen=True)
class Package:
    folder: Path
    distribution: str
    import_name: str
    declared: frozenset[str]  # canonical distribution names, base and extras


def read_packages(packages_dir: Path) -> list[Package]:
    packages = []
    for pyproject in sorted(packages_dir.glob("*/pyproject.toml")):
        config = tomllib.loads(pyproject.read_text())
        project = config["project"]
        requirements = list(project.get("dependencies", []))
        for extra in project.get("optional-dependencies", {}).values():
            requirements += extra
        (wheel_package,) = config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
        packages.append(
            Package(
                folder=pyproject.parent,
                distribution=canonicalize_name(project["name"]),
                import_name=Path(wheel_package).name,
                declared=frozenset(canonicalize_name(Requirement(r).name) for r in requirements),
            )
        )
    return packages


def _type_checking_blocks(tree: ast.AST) -> list[ast.AST]:
    """The bodies of ``if TYPE_CHECKING:`` blocks: imports there never run."""
    blocks: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                blocks.extend(node.body)
    return blocks


def imported_modules(source: str, runtime_only: bool = False) -> set[str]:
    """Top-level names of every absolute import in a module, at any depth (lazy imports included);
    with ``runtime_only``, leaving out imports that only type checkers see (``if TYPE_CHECKING:``)."""
    tree = ast.parse(source)
    skipped = (
        {id(node) for block in _type_checking_blocks(tree) for node in ast.walk(block)}
        if runtime_only
        else set()
    )
    names = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value.split(".")[0])
    return names


def layering_violations(packages_dir: Path) -> list[str]:
    """Every breach of the layering, as readable lines; empty when the tree is clean."""
    packages = read_packages(packages_dir)
    ours = {package.import_name: package.distribution for package in packages}
    violations = []
    for package in packages:
        allowed = LAYERS.get(package.distribution)
        if allowed is None:
            violations.append(f"{package.distribution} has no layer in LAYERS: add one")
            continue
        for dependency in sorted(package.declared & set(LAYERS) - allowed - {package.distribution}):
            violations.append(f"{package.distribution} may not depend on {dependency}")
        for path in sorted((package.folder / "src").rglob("*.py")):
            where = path.relative_to(packages_dir)
            source = path.read_text()
            runtime = imported_modules(source, runtime_only=True)
            for module in sorted(imported_modules(source)):
                if module in ours:
                    target = ours[module]
                    if target != package.distribution and target not in package.declared:
                        violations.append(f"{where} imports {module}, but {package.distribution} "
                                          f"does not depend on {target}")  # fmt: skip
                elif module in runtime and module not in sys.stdlib_module_names and module != "__future__":
                    candidates = IMPORT_DISTRIBUTIONS.get(module, {canonicalize_name(module)})
                    if not candidates & package.declared:
                        violations.append(f"{where} imports {module}, which {package.distribution} "
                                          f"does not declare")  # fmt: skip
    return violations


def imported_dotted_names(source: str) -> set[str]:
    """The full dotted name of every absolute import in a module, and of each name imported from one."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def backend_author_imports(packages_dir: Path) -> list[str]:
    """Every import of a backend-author module by the meta-package, as readable lines."""
    (meta,) = [p for p in read_packages(packages_dir) if p.distribution == META_PACKAGE]
    found = []
    for path in sorted((meta.folder / "src").rglob("*.py")):
        for name in sorted(imported_dotted_names(path.read_text())):
            if any(name == module or name.startswith(module + ".") for module in BACKEND_AUTHOR_MODULES):
                found.append(f"{path.relative_to(packages_dir)} imports {name}")
    return found


def test_every_package_has_a_layer() -> None:
    assert {p.distribution for p in read_packages(PACKAGES_DIR)} == set(LAYERS)


def test_the_tree_respects_the_layering() -> None:
    assert layering_violations(PACKAGES_DIR) == []


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """A copy of the packages' metadata and sources, to break on purpose."""
    for pyproject in PACKAGES_DIR.glob("*/pyproject.toml"):
        folder = tmp_path / pyproject.parent.name
        shutil.copytree(pyproject.parent / "src", folder / "src")
        shutil.copy(pyproject, folder / "pyproject.toml")
    assert layering_violations(tmp_path) == []
    return tmp_path


def test_the_meta_package_imports_no_backend_author_module() -> None:
    assert backend_author_imports(PACKAGES_DIR) == []


def test_a_meta_package_namespace_importing_the_kit_fails(tree_copy: Path) -> None:
    module = tree_copy / "burn" / "src" / "burn" / "tensor" / "module.py"
    module.write_text(module.read_text() + "from burn_backend import kit as kit\n")
    assert backend_author_imports(tree_copy) == ["burn/src/burn/tensor/module.py imports burn_backend.kit"]


def test_a_backend_importing_another_backend_fails(tree_copy: Path) -> None:
    module = tree_copy / "ndarray-backend" / "src" / "burn_ndarray" / "_sneaky.py"
    module.write_text("def helper():\n    from burn_cuda import something\n")
    assert layering_violations(tree_copy) == [
        "ndarray-backend/src/burn_ndarray/_sneaky.py imports burn_cuda, "
        "but burn-ndarray does not depend on burn-cuda"
    ]


def test_backend_core_importing_anything_of_ours_fails(tree_copy: Path) -> None:
    init = tree_copy / "backend-core" / "src" / "burn_backend" / "__init__.py"
    init.write_text(init.read_text() + "\nimport importlib\nimportlib.import_module('burn_nn.optim')\n")
    assert layering_violations(tree_copy) == [
        "backend-core/src/burn_backend/__init__.py imports burn_nn, "
        "but burn-backend-core does not depend on burn-nn"
    ]


def test_declaring_a_forbidden_dependency_fails(tree_copy: Path) -> None:
    pyproject = tree_copy / "autodiff" / "pyproject.toml"
    text = pyproject.read_text().replace(
        '"burn-backend-core>=0.1,<0.2",', '"burn-backend-core>=0.1,<0.2",\n    "burn-ndarray>=0.1,<0.2",'
    )
    pyproject.write_text(text)
    assert layering_violations(tree_copy) == ["burn-autodiff may not depend on burn-ndarray"]


def test_an_undeclared_third_party_import_fails(tree_copy: Path) -> None:
    module = tree_copy / "autodiff" / "src" / "burn_autodiff" / "_uses_scipy.py"
    module.write_text("import scipy.special\n")
    assert layering_violations(tree_copy) == [
        "autodiff/src/burn_autodiff/_uses_scipy.py imports scipy, which burn-autodiff does not declare"
    ]


def test_a_type_checking_only_import_needs_no_runtime_dependency(tree_copy: Path) -> None:
    module = tree_copy / "autodiff" / "src" / "burn_autodiff" / "_typed.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import scipy\nimport yaml\n")
    assert layering_violations(tree_copy) == [
        "autodiff/src/burn_autodiff/_typed.py imports yaml, which burn-autodiff does not declare"
    ]
