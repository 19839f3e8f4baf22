"""PyTorch ``nn.Module`` spellings on a ``Module``: an ``AttributeError`` naming Burn's replacement, which
exists; a subclass's own attribute of the same name wins; ``hasattr`` stays false."""

from __future__ import annotations

from typing import Any

import pytest

from burn_backend import Device, Tensor
from burn_nn import LinearConfig, Module, ModuleVisitor, Param, RunningState
from burn_nn._module_hints import MISSING, ModuleSpellingError

# PyTorch's spelling -> what the message must say, and the object and attribute it names (which exist)
REPLACEMENTS: dict[str, tuple[str, object, str]] = {
    "parameters": ("model.params()", Module, "params"),
    "named_parameters": ("model.named_params()", Module, "named_params"),
    "buffers": ("model.into_record()", Module, "into_record"),
    "named_buffers": ("model.into_record()", Module, "into_record"),
    "modules": ("model.visit(visitor)", Module, "visit"),
    "named_modules": ("model.visit(visitor)", Module, "visit"),
    "children": ("ModuleVisitor (its enter_module", ModuleVisitor, "enter_module"),
    "named_children": ("ModuleVisitor (its enter_module", ModuleVisitor, "enter_module"),
    "apply": ("model.map(mapper)", Module, "map"),
    "eval": ("model.valid()", Module, "valid"),
    "train": ("Module.from_inner(model, autodiff_device)", Module, "from_inner"),
    "requires_grad_": ("model.no_grad()", Module, "no_grad"),
    "zero_grad": ("loss.backward() returns the gradients", Tensor, "backward"),
    "state_dict": ("model.into_record()", Module, "into_record"),
    "load_state_dict": ("model.load_record(record)", Module, "load_record"),
    "to": ("model.to_device(device)", Module, "to_device"),
    "cuda": ("model.to_device(Cuda().device(0))", Module, "to_device"),
    "cpu": ("model.to_device(NdArray().device())", Module, "to_device"),
    "register_buffer": ("RunningState(tensor)", RunningState, "value"),
    "register_parameter": ("Param.initialized(tensor)", Param, "initialized"),
    "add_module": ("setattr(self, name, module)", Module, "__setattr__"),
}


class Net(Module):
    def __init__(self, device: Device) -> None:
        self.fc = LinearConfig(2, 3).init(device)

    def forward(self, x: Tensor) -> Tensor:
        return self.fc(x)


def test_every_spelling_is_tested() -> None:
    assert set(REPLACEMENTS) == set(MISSING)


@pytest.mark.parametrize("name", sorted(REPLACEMENTS))
def test_a_pytorch_spelling_names_the_replacement(inner_device: Device, name: str) -> None:
    model = Net(inner_device)
    with pytest.raises(ModuleSpellingError) as caught:
        getattr(model, name)
    error = caught.value
    assert isinstance(error, AttributeError)
    assert error.name == name
    assert error.obj is model
    expected, owner, attribute = REPLACEMENTS[name]
    message = str(error)
    assert message.startswith(f"Net.{name} is PyTorch's spelling; in Burn, "), message
    assert expected in message, message
    assert hasattr(owner, attribute), f"the hint for {name} names {attribute}, which does not exist"
    assert not hasattr(model, name)


def test_the_forward_a_module_defines_still_runs(inner_device: Device) -> None:
    model = Net(inner_device)
    assert model.forward(Tensor.ones([4, 2], inner_device)).dims() == [4, 3]


def test_a_subclass_attribute_of_the_same_name_wins(inner_device: Device) -> None:
    class Custom(Net):
        def train(self) -> str:
            return "custom train"

        @property
        def modules(self) -> list[str]:
            return ["fc"]

    model = Custom(inner_device)
    model.eval = "an instance attribute"  # type: ignore[attr-defined]
    assert model.train() == "custom train"
    assert model.modules == ["fc"]
    assert model.eval == "an instance attribute"  # type: ignore[attr-defined]
    assert hasattr(model, "train")
    assert hasattr(model, "eval")
    with pytest.raises(ModuleSpellingError, match="named_params"):
        model.named_parameters  # noqa: B018 - the names it does not define keep their hints


def test_a_property_of_that_name_that_fails_gets_the_plain_error(inner_device: Device) -> None:
    class Broken(Net):
        @property
        def children(self) -> Any:
            return self.missing_field

    with pytest.raises(AttributeError) as caught:
        Broken(inner_device).children  # noqa: B018
    # the name is the subclass's own: no PyTorch hint hides its getter's failure
    assert not isinstance(caught.value, ModuleSpellingError)
    assert caught.value.name == "children"


def test_other_missing_names_get_python_s_error(inner_device: Device) -> None:
    model = Net(inner_device)
    with pytest.raises(AttributeError) as caught:
        model.no_such_thing  # noqa: B018
    assert not isinstance(caught.value, ModuleSpellingError)
    assert str(caught.value) == "'Net' object has no attribute 'no_such_thing'"
    assert caught.value.name == "no_such_thing"
    assert caught.value.obj is model
    assert getattr(model, "parameters", None) is None
