"""The shape every package keeps: files, single-sourced versions, ranges between packages, the README;
and the meta-package installed from built wheels, as a user installs it."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).parents[1]
FOLDERS = sorted(p.parent for p in (ROOT / "packages").glob("*/pyproject.toml"))
EXPECTED_FOLDERS = {
    "backend-core", "ndarray-backend", "cuda-backend", "autodiff", "fusion", "router", "remote",
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


def test_the_twelve_packages_exist() -> None:
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
        itself = canonicalize_name(pyproject(folder)["project"]["name"])  # an extra naming its own extras
        if name in versions and name != itself:
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


# -- the meta-package's distribution name ------------------------------------------------------------
META = ROOT / "packages" / "burn"
META_DISTRIBUTION = canonicalize_name(pyproject(META)["project"]["name"])
# PyPI's "burn" is an unrelated project (0.4.6): a distribution of that name would lose to it in pip.
TAKEN_ON_THE_INDEX = {"burn"}
INSTALL_COMMAND = re.compile(r"pip install ['\"]?([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]'\"\s]*\])?")


def test_meta_package_has_a_distribution_name_free_on_the_index_and_imports_as_burn() -> None:
    assert META_DISTRIBUTION not in TAKEN_ON_THE_INDEX
    assert import_name(META) == "burn"
    (all_extra,) = pyproject(META)["project"]["optional-dependencies"]["all"]
    assert canonicalize_name(Requirement(all_extra).name) == META_DISTRIBUTION


def documents() -> list[Path]:
    """Every text that tells a user what to install: READMEs, docs, docstrings of the meta-package."""
    paths = [ROOT / "README.md", *ROOT.glob("packages/*/README.md"), *ROOT.glob("docs/**/*.md")]
    paths += [*ROOT.glob("examples/**/*.md"), *(META / "src").rglob("*.py")]
    return sorted(paths)


def test_install_commands_name_our_distributions() -> None:
    ours = {canonicalize_name(pyproject(folder)["project"]["name"]) for folder in FOLDERS}
    found = []
    for path in documents():
        for match in INSTALL_COMMAND.finditer(path.read_text()):
            name = canonicalize_name(match.group(1))
            if name.startswith("burn"):
                found.append(name)
                assert name in ours, f"{path.relative_to(ROOT)}: {match.group(0)!r} names no package of ours"
    assert META_DISTRIBUTION in found, "no install command names the meta-package"


def local_requirements(folder: Path, extras: set[str]) -> set[tuple[Path, frozenset[str]]]:
    """The package folders (with extras) that installing ``folder[extras]`` needs, ``folder`` included."""
    folders = {canonicalize_name(pyproject(f)["project"]["name"]): f for f in FOLDERS}
    needed: set[tuple[Path, frozenset[str]]] = set()
    pending = [(folder, frozenset(extras))]
    while pending:
        current, wanted = pending.pop()
        if (current, wanted) in needed:
            continue
        needed.add((current, wanted))
        project = pyproject(current)["project"]
        requirements = list(project.get("dependencies", []))
        for extra in wanted:
            requirements += project["optional-dependencies"][extra]
        for line in requirements:
            requirement = Requirement(line)
            local = folders.get(canonicalize_name(requirement.name))
            if local is not None:
                pending.append((local, frozenset(requirement.extras)))
    return needed


def fresh_venv(path: Path) -> Path:
    """A new virtual environment with pip and nothing of ours; its python."""
    uv = os.environ.get("UV") or shutil.which("uv")
    if uv:
        subprocess.run([uv, "venv", "--quiet", "--seed", "--python", sys.executable, str(path)], check=True)
    else:
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True)
    return path / ("Scripts" if os.name == "nt" else "bin") / "python"


@pytest.mark.slow
def test_meta_package_with_an_extra_installs_ours_from_the_built_wheels(tmp_path: Path) -> None:
    """``pip install 'burn-py[ndarray]' --find-links <wheels>``, as the README has users do: every
    distribution of ours comes from the wheels built here, nothing from the index shadows them, and
    ``import burn`` is this checkout's package (built with pip, installed in a new environment)."""
    python = fresh_venv(tmp_path / "venv")
    dist = tmp_path / "dist"
    needed = local_requirements(META, {"ndarray"})
    folders = sorted({folder for folder, _ in needed})
    build = [str(python), "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(dist)]
    subprocess.run([*build, *map(str, folders)], check=True, capture_output=True, text=True)

    report = tmp_path / "report.json"
    install = [str(python), "-m", "pip", "install", "--quiet", "--find-links", str(dist), "--report"]
    result = subprocess.run(
        [*install, str(report), f"{META_DISTRIBUTION}[ndarray]"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    installed = {
        canonicalize_name(item["metadata"]["name"]): item
        for item in json.loads(report.read_text())["install"]
    }
    ours = {canonicalize_name(pyproject(folder)["project"]["name"]) for folder in folders}
    assert ours <= set(installed), f"not installed: {sorted(ours - set(installed))}"
    assert not TAKEN_ON_THE_INDEX & set(installed), "the index's unrelated 'burn' was installed"
    for name in ours:
        url = urlparse(installed[name]["download_info"]["url"])
        source = Path(unquote(url.path))
        assert url.scheme == "file", f"{name} came from {url.geturl()}"
        assert source.parent == dist, f"{name} came from {url.geturl()}"
        assert installed[name]["metadata"]["version"] == str(checkout_versions()[name])

    probe = (
        "import importlib.metadata as m, json, burn, burn.backend\n"
        "device = burn.backend.NdArray().device()\n"
        "print(json.dumps({'file': burn.__file__, 'version': burn.__version__,\n"
        f"    'distribution': m.version({META_DISTRIBUTION!r}),\n"
        "    'providers': m.packages_distributions()['burn'],\n"
        "    'sum': burn.Tensor.ones([2, 3], device=device).sum().into_scalar()}))\n"
    )
    environment = {
        key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "BURN_DEVICE"}
    }
    result = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path, env=environment
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert Path(seen["file"]).is_relative_to(tmp_path / "venv"), seen["file"]
    assert seen["providers"] == [META_DISTRIBUTION]
    assert seen["version"] == seen["distribution"] == str(checkout_versions()[META_DISTRIBUTION])
    assert seen["sum"] == 6.0
