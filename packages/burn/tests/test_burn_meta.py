"""The meta-package: versions, re-exports and the error naming a missing extra."""

import importlib
import importlib.metadata
import sys
from pathlib import Path

import pytest
import tomllib

import burn
import burn.backend
from burn._reexport import import_extra

PYPROJECT = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
EXTRAS = PYPROJECT["project"]["optional-dependencies"]

# submodule of ``burn`` -> (module it re-exports, extra that installs that module)
REEXPORTS = {
    "nn": ("burn_nn", "nn"),
    "optim": ("burn_nn.optim", "nn"),
    "record": ("burn_record", "record"),
    "train": ("burn_train", "train"),
    "data": ("burn_train.data", "train"),
    "onnx": ("burn_import.onnx", "import"),
}


def distribution_of(module_name: str) -> str:
    top = module_name.split(".")[0]
    return "burn-" + top.removeprefix("burn_").replace("_", "-")


def test_version_is_single_sourced() -> None:
    assert burn.__version__ == importlib.metadata.version("burn")


@pytest.mark.parametrize("submodule", sorted(REEXPORTS))
def test_submodule_reexports_its_package(submodule: str) -> None:
    target_name, _ = REEXPORTS[submodule]
    module = importlib.import_module(f"burn.{submodule}")
    target = importlib.import_module(target_name)
    assert module.__all__ == list(target.__all__)
    for name in module.__all__:
        assert getattr(module, name) is getattr(target, name)


def test_tensor_reexports_backend_core() -> None:
    import burn_backend

    assert burn.tensor.__all__ == list(burn_backend.__all__)
    for name in burn_backend.__all__:
        assert getattr(burn, name) is getattr(burn_backend, name)


@pytest.mark.parametrize(("submodule", "target"), sorted(REEXPORTS.items()))
def test_extra_named_for_each_submodule_installs_its_package(submodule: str, target: tuple[str, str]) -> None:
    module_name, extra = target
    assert any(req.startswith(distribution_of(module_name)) for req in EXTRAS[extra]), (submodule, extra)


@pytest.mark.parametrize("name", sorted(burn.backend.PROVIDERS))
def test_extra_named_for_each_backend_installs_its_package(name: str) -> None:
    module_name, extra = burn.backend.PROVIDERS[name]
    assert any(req.startswith(distribution_of(module_name)) for req in EXTRAS[extra]), (name, extra)


def test_all_extra_names_every_other_extra() -> None:
    (all_requirement,) = EXTRAS["all"]
    named = set(all_requirement.removeprefix("burn[").removesuffix("]").split(","))
    assert named == set(EXTRAS) - {"all", "cuda12", "cuda13"}


@pytest.fixture
def hide_module(monkeypatch: pytest.MonkeyPatch):
    """Make ``import <name>`` fail as if the package were not installed."""

    def hide(module_name: str, *dependants: str) -> None:
        for dependant in dependants:
            monkeypatch.delitem(sys.modules, dependant, raising=False)
            parent, _, child = dependant.rpartition(".")
            if parent in sys.modules:
                monkeypatch.delattr(sys.modules[parent], child, raising=False)
        monkeypatch.setitem(sys.modules, module_name, None)

    return hide


@pytest.mark.parametrize("submodule", sorted(REEXPORTS))
def test_missing_package_names_the_extra(submodule: str, hide_module) -> None:
    module_name, extra = REEXPORTS[submodule]
    hide_module(module_name.split(".")[0], f"burn.{submodule}", module_name)
    with pytest.raises(ModuleNotFoundError, match=rf"pip install 'burn\[{extra}\]'"):
        importlib.import_module(f"burn.{submodule}")


def test_missing_backend_names_the_extra(hide_module, monkeypatch: pytest.MonkeyPatch) -> None:
    hide_module("burn_cuda")
    monkeypatch.delitem(vars(burn.backend), "Cuda", raising=False)
    with pytest.raises(
        ModuleNotFoundError, match=r"burn\.backend\.Cuda.*burn-cuda.*pip install 'burn\[cuda\]'"
    ):
        from burn.backend import Cuda  # noqa: F401


def test_broken_dependency_of_an_installed_package_is_not_blamed_on_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "burn_installed_but_broken"
    package.mkdir()
    (package / "__init__.py").write_text("import a_dependency_that_is_missing\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as caught:
        import_extra("burn_installed_but_broken", "nn", "burn.nn")
    assert caught.value.name == "a_dependency_that_is_missing"
    assert "pip install" not in str(caught.value)


def test_lazy_submodule_attribute() -> None:
    assert burn.nn is importlib.import_module("burn.nn")
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        burn.nonexistent  # noqa: B018
