"""Where a PyTorch user reaches for an ``nn.Module`` method that Burn's ``Module`` spells differently (or
has no need for), the ``AttributeError`` names the replacement: the module counterpart of ``Tensor``'s
table of PyTorch spellings."""

from __future__ import annotations

from typing import Any


class ModuleSpellingError(AttributeError):
    """A PyTorch ``nn.Module`` spelling that ``Module`` lacks; the message names Burn's replacement.

    An ``AttributeError``, so ``hasattr(model, "parameters")`` stays false and duck typing keeps working.

    Example:
        >>> try:
        ...     LinearConfig(2, 3).init(device).parameters()
        ... except AttributeError as error:
        ...     print(error)
        Linear.parameters is PyTorch's spelling; in Burn, use model.params() (Params; ...
    """


_VISIT = "model.visit(visitor) with a ModuleVisitor (its enter_module/exit_module see each sub-module)"
_RECORD = "use model.into_record() (running state is recorded with the parameters)"
_FIELDS = f"sub-modules are ordinary attributes; use them, or {_VISIT}"
_TO_DEVICE = "use model.to_device(device), which returns the module on that device"

# a name Module lacks -> what to do instead
MISSING: dict[str, str] = {
    "parameters": "use model.params() (Params; p.val() is the tensor), model.num_params() to count "
    "them, or model.visit(visitor)",
    "named_parameters": "use model.named_params() (each Param with its dotted path, 'layers.0.weight')",
    "buffers": _RECORD,
    "named_buffers": _RECORD,
    "modules": _FIELDS,
    "named_modules": _FIELDS,
    "children": _FIELDS,
    "named_children": _FIELDS,
    "apply": "use model.map(mapper) with a ModuleMapper (it returns a new module)",
    "eval": "there is no mode flag; use model.valid() (the model on the inner backend: no graph, dropout "
    "off, batch norm on its running statistics)",
    "train": "there is no mode flag; a model on an autodiff device trains (init it there, or use "
    "Module.from_inner(model, autodiff_device) after valid())",
    "requires_grad_": "use model.no_grad() to freeze (it returns a new module); on an autodiff device "
    "parameters require gradients",
    "zero_grad": "drop the call: loss.backward() returns the gradients, nothing is stored on the "
    "parameters to zero",
    "state_dict": "use model.into_record() (a nested dict of records), or model.save_file(path, recorder)",
    "load_state_dict": "use model = model.load_record(record) (it returns a new module; strict=False "
    "keeps what the record lacks, load_record_partial lists it), or model.load_file(path, recorder)",
    "to": _TO_DEVICE,
    "cuda": f"{_TO_DEVICE}, e.g. model.to_device(Cuda().device(0))",
    "cpu": f"{_TO_DEVICE}, e.g. model.to_device(NdArray().device())",
    "register_buffer": "assign an attribute: self.name = RunningState(tensor) (recorded) or a plain "
    "tensor (a constant: follows the module between devices, not recorded)",
    "register_parameter": "assign an attribute: self.name = Param.initialized(tensor)",
    "add_module": "assign an attribute: setattr(self, name, module)",
}


def spelling_error(module: Any, name: str) -> AttributeError:
    """The error for ``module.<name>``, a name normal lookup did not find: the replacement where
    ``name`` is a known PyTorch spelling, else the plain ``AttributeError`` Python would raise."""
    cls = type(module)
    hint = MISSING.get(name)
    # a class that defines the name itself (a property whose getter raised AttributeError, say) gets the
    # plain error: the name is the user's, not PyTorch's
    if hint is not None and not any(name in vars(base) for base in cls.__mro__):
        return ModuleSpellingError(
            f"{cls.__name__}.{name} is PyTorch's spelling; in Burn, {hint}", name=name, obj=module
        )
    return AttributeError(f"{cls.__name__!r} object has no attribute {name!r}", name=name, obj=module)
