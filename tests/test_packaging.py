"""The shape every package keeps: files, single-sourced versions, ranges between packages, the README."""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import subprocess
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).parents[1]
FOLDERS = sorted(p.parent for p in (ROOT / "packages").glob("*/pyproject.toml"))
EXPECTED_FOLDERS = {
    "backend-core", "ndarray-backend", "cuda-backend", "autodiff", "fusion", "router",
    "nn", "record", "train", "import", "burn",
}  # fmt: skip


def pyproject(folder: Path) -> dict:
    return tomllib.loads((folder / "pyproject.toml").read_text())


def import_name(folder: Path) -> str:
    (package,) = pyproject(folder)["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    return Path(package).name


def all_requirements(folder: Path) -> list[Requirement]:
    project = pyproject(folder)["project"]
    requirements = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        requirements += extra
    return [Requirement(r) for r in requirements]


def checkout_versions() -> dict[str, Version]:
    versions = {}
    for folder in FOLDERS:
        text = (folder / "src" / import_name(folder) / "_version.py").read_text()
        (version,) = re.findall(r'^__version__ = "([^"]+)"$', text, re.MULTILINE)
        versions[canonicalize_name(pyproject(folder)["project"]["name"])] = Version(version)
    return versions


def test_the_eleven_packages_exist() -> None:
    assert {folder.name for folder in FOLDERS} == EXPECTED_FOLDERS


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_package_layout(folder: Path) -> None:
    name = import_name(folder)
    source = folder / "src" / name
    config = pyproject(folder)
    assert config["build-system"]["build-backend"] == "hatchling.build"
    assert config["project"]["dynamic"] == ["version"]
    assert config["tool"]["hatch"]["version"]["path"] == f"src/{name}/_version.py"
    assert (folder / "README.md").read_text().strip()
    assert (source / "py.typed").exists()
    assert "__all__" in (source / "__init__.py").read_text()
    assert list((folder / "tests").glob("test_*.py")), "every package has tests"


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_installed_version_is_the_single_source(folder: Path) -> None:
    module = importlib.import_module(import_name(folder))
    distribution = pyproject(folder)["project"]["name"]
    assert module.__version__ == importlib.metadata.version(distribution)
    assert Version(module.__version__) == checkout_versions()[canonicalize_name(distribution)]


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: f.name)
def test_dependencies_between_packages_are_ranges_the_checkout_satisfies(folder: Path) -> None:
    versions = checkout_versions()
    for requirement in all_requirements(folder):
        assert requirement.url is None, f"{folder.name} names a path or URL: {requirement}"
        name = canonicalize_name(requirement.name)
        if name in versions and name != "burn":
            specifier = requirement.specifier
            assert any(s.operator == "<" for s in specifier), f"{requirement} needs an upper bound"
            assert any(s.operator == ">=" for s in specifier), f"{requirement} needs a lower bound"
            assert specifier.contains(versions[name]), (
                f"{requirement} excludes the checkout's {versions[name]}"
            )


def test_readme_lists_every_package() -> None:
    readme = (ROOT / "README.md").read_text()
    for folder in FOLDERS:
        assert f"`{pyproject(folder)['project']['name']}`" in readme, folder.name


def test_readme_quick_start_has_exactly_the_two_commands_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    block = readme.split("## Quick start", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [line for line in block.splitlines() if line.strip()]
    assert len(lines) == 2
    assert lines[0].endswith("# the main job")
    assert lines[1].endswith("# the whole test suite")
    printed = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run"), "--print"], capture_output=True, text=True, check=True
    ).stdout
    assert printed.strip() == lines[1].split("#")[0].strip()
