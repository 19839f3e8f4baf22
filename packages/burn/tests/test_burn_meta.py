"""The meta-package: versions, re-exports, clean namespaces and the error naming a missing extra."""

import importlib
import importlib.metadata
import subprocess
import sys
import types
from pathlib import Path

import pytest
import tomllib

import burn
import burn.backend
from burn._reexport import BACKEND_PROVIDERS, DISTRIBUTION, SUBMODULES, import_extra

PYPROJECT = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
EXTRAS = PYPROJECT["project"]["optional-dependencies"]

# namespace of ``burn`` -> (module it re-exports, extra that installs that module)
REEXPORTS = {
    "tensor": ("burn_backend", ""),
    "tensor.activation": ("burn_backend.activation", ""),
    "tensor.module": ("burn_backend.module", ""),
    "tensor.signal": ("burn_backend.signal", ""),
    "tensor.linalg": ("burn_backend.linalg", ""),
    "tensor.grid": ("burn_backend.grid", ""),
    "tensor.distributed": ("burn_backend.distributed", ""),
    "nn": ("burn_nn", "nn"),
    "nn.loss": ("burn_nn.loss", "nn"),
    "nn.functional": ("burn_nn.functional", "nn"),
    "optim": ("burn_nn.optim", "nn"),
    "record": ("burn_record", "record"),
    "train": ("burn_train", "train"),
    "data": ("burn_train.data", "train"),
    "onnx": ("burn_import.onnx", "import"),
}
# the namespaces inside a namespace (its sub-modules), beyond what its package's __all__ names
SUB_NAMESPACES = {
    "tensor": {"activation", "module", "signal", "linalg", "grid", "distributed"},
    "nn": {"loss", "functional"},
}
# names a namespace also re-exports from a second package, where that one (its extra) is installed
ALSO_FROM = {"record": ("burn_import", ("PyTorchFileRecorder", "SafetensorsFileRecorder", "LoadArgs"))}
EXTRA_OF = {name: extra for name, (_, extra) in REEXPORTS.items() if extra}


def distribution_of(module_name: str) -> str:
    top = module_name.split(".")[0]
    return "burn-" + top.removeprefix("burn_").replace("_", "-")


def also_exported(namespace: str) -> dict[str, object]:
    """The names ``burn.<namespace>`` takes from its second package, where that one is installed."""
    if namespace not in ALSO_FROM:
        return {}
    module_name, names = ALSO_FROM[namespace]
    try:
        source = importlib.import_module(module_name)
    except ModuleNotFoundError:
        return {}
    return {name: getattr(source, name) for name in names}


def public_names(module: types.ModuleType) -> set[str]:
    """What ``dir()`` shows of a module, less the module attributes every module has (dunders)."""
    return {name for name in dir(module) if not (name.startswith("__") and name.endswith("__"))}


def test_version_is_single_sourced() -> None:
    assert PYPROJECT["project"]["name"] == DISTRIBUTION
    assert burn.__version__ == importlib.metadata.version(DISTRIBUTION)


def test_the_distribution_is_not_named_like_the_unrelated_burn_on_the_index() -> None:
    assert DISTRIBUTION != "burn"  # "burn" on PyPI is another project (0.4.6), which pip would prefer


@pytest.mark.parametrize("namespace", sorted(REEXPORTS))
def test_namespace_reexports_its_package(namespace: str) -> None:
    target_name, _ = REEXPORTS[namespace]
    module = importlib.import_module(f"burn.{namespace}")
    target = importlib.import_module(target_name)
    also = also_exported(namespace)
    assert module.__all__ == [*target.__all__, *also]
    for name, value in also.items():
        assert getattr(module, name) is value
    for name in target.__all__:
        value = getattr(target, name)
        if isinstance(value, types.ModuleType):  # a sub-namespace: ours, holding the same names
            assert getattr(module, name) is importlib.import_module(f"burn.{namespace}.{name}")
            assert getattr(module, name).__all__ == value.__all__
        else:
            assert getattr(module, name) is value


@pytest.mark.parametrize("namespace", sorted(REEXPORTS))
def test_namespace_holds_user_names_only(namespace: str) -> None:
    target_name, _ = REEXPORTS[namespace]
    module = importlib.import_module(f"burn.{namespace}")
    target = importlib.import_module(target_name)
    expected = set(target.__all__) | SUB_NAMESPACES.get(namespace, set()) | set(also_exported(namespace))
    assert public_names(module) == expected


def test_top_level_holds_the_tensor_api_and_the_namespaces_only() -> None:
    import burn_backend

    names = public_names(burn)
    private = {name for name in names if name.startswith("_")}
    # private submodules of burn are attributes of the package once imported; nothing else may be
    assert all(isinstance(getattr(burn, name), types.ModuleType) for name in private), private
    assert names - private == set(burn_backend.__all__) | set(SUBMODULES)


def test_backend_namespace_holds_user_names_only() -> None:
    expected = set(BACKEND_PROVIDERS) | {
        "Backend", "AutodiffBackend", "Device", "default_device", "parse_device", "set_default_device",
    }  # fmt: skip
    assert set(burn.backend.__all__) == expected
    assert public_names(burn.backend) == expected
    for name in ("reexport", "Any", "annotations", "PROVIDERS", "import_extra"):
        for namespace in REEXPORTS:
            assert name not in dir(importlib.import_module(f"burn.{namespace}")), (namespace, name)


def test_every_module_a_namespace_reexports_is_a_sub_namespace() -> None:
    """A package adding a sub-package to its ``__all__`` (as ``burn_nn.loss``) needs its namespace here."""
    for namespace, (target_name, _) in REEXPORTS.items():
        target = importlib.import_module(target_name)
        modules = {name for name in target.__all__ if isinstance(getattr(target, name), types.ModuleType)}
        for name in modules:
            assert f"{namespace}.{name}" in REEXPORTS, f"burn.{namespace}.{name} is missing"


@pytest.mark.parametrize(
    "statement",
    [
        pytest.param(f"import burn.{namespace} as namespace", id=f"import burn.{namespace}")
        for namespace in sorted(n for n in REEXPORTS if "." in n)
    ]
    + [
        pytest.param(
            f"from burn.{parent} import {child} as namespace", id=f"from burn.{parent} import {child}"
        )
        for parent, _, child in sorted(n.partition(".") for n in REEXPORTS if "." in n)
    ],
)
def test_sub_namespaces_import_by_either_spelling_in_a_fresh_interpreter(statement: str) -> None:
    check = (
        f"{statement}\n"
        "import sys\n"
        "assert sys.modules[namespace.__name__] is namespace, 'not registered in sys.modules'\n"
        "parent, _, child = namespace.__name__.rpartition('.')\n"
        "assert getattr(sys.modules[parent], child) is namespace, 'not the attribute of its parent'\n"
        "assert namespace.__all__ and all(hasattr(namespace, name) for name in namespace.__all__)\n"
        "print(namespace.__name__)\n"
    )
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().startswith("burn.")


@pytest.mark.parametrize(("namespace", "extra"), sorted(EXTRA_OF.items()))
def test_extra_named_for_each_namespace_installs_its_package(namespace: str, extra: str) -> None:
    module_name, _ = REEXPORTS[namespace]
    assert any(req.startswith(distribution_of(module_name)) for req in EXTRAS[extra]), (namespace, extra)


@pytest.mark.parametrize("name", sorted(BACKEND_PROVIDERS))
def test_extra_named_for_each_backend_installs_its_package(name: str) -> None:
    module_name, extra = BACKEND_PROVIDERS[name]
    assert any(req.startswith(distribution_of(module_name)) for req in EXTRAS[extra]), (name, extra)


def test_all_extra_names_every_other_extra() -> None:
    (all_requirement,) = EXTRAS["all"]
    assert all_requirement.startswith(f"{DISTRIBUTION}["), "the `all` extra must name this distribution"
    named = set(all_requirement.removeprefix(f"{DISTRIBUTION}[").removesuffix("]").split(","))
    # the CUDA-version extras pick a CuPy (and cuDNN) build, so `all` takes none of them
    assert named == set(EXTRAS) - {"all", "cuda12", "cuda13", "cudnn12", "cudnn13"}


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


@pytest.mark.parametrize("namespace", sorted(n for n in EXTRA_OF if "." not in n))
def test_missing_package_names_the_extra(namespace: str, hide_module) -> None:
    module_name, extra = REEXPORTS[namespace]
    hide_module(module_name.split(".")[0], f"burn.{namespace}", module_name)
    with pytest.raises(ModuleNotFoundError, match=rf"pip install '{DISTRIBUTION}\[{extra}\]'") as caught:
        importlib.import_module(f"burn.{namespace}")
    assert caught.value.name == module_name


def test_missing_backend_names_the_extra(hide_module, monkeypatch: pytest.MonkeyPatch) -> None:
    hide_module("burn_cuda")
    monkeypatch.delitem(vars(burn.backend), "Cuda", raising=False)
    with pytest.raises(
        ModuleNotFoundError, match=rf"burn\.backend\.Cuda.*burn-cuda.*pip install '{DISTRIBUTION}\[cuda\]'"
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


def test_lazy_namespace_attribute() -> None:
    assert burn.nn is importlib.import_module("burn.nn")
    assert burn.nn.loss is importlib.import_module("burn.nn.loss")
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        burn.nonexistent  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'Nonexistent'"):
        burn.backend.Nonexistent  # noqa: B018
