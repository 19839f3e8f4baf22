"""The recurrent ops against PyTorch: ``lstm`` and ``gru`` (one layer, one direction) through
``burn_backend.module``, their values and their gradients (input, initial states, weights, biases) next to
``torch.nn.LSTM``/``torch.nn.GRU`` in float64 with the weights copied, for sequences of 1 and 200 steps,
batches of 1 and odd sizes, forward and reverse, f32 and f64; a two-layer bidirectional stack built from
the ops; the backward ops called directly against the interface's composed default; then the errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from burn_backend import Device, DType, Tensor, module
from burn_backend.testing import check, make, random_array, require_dtype
from burn_backend.testing.module._reference import default, kernel

DTYPES = [DType.F32, DType.F64]
GATES = {"lstm": 4, "gru": 3}


def torch_module() -> Any:
    return pytest.importorskip("torch")


@dataclass(frozen=True)
class Case:
    kind: str
    batch: int
    seq: int
    d_input: int
    hidden: int
    reverse: bool = False
    bias: bool = True

    def __str__(self) -> str:
        return (
            f"{self.kind}-b{self.batch}-s{self.seq}-{self.d_input}x{self.hidden}"
            f"{'-rev' if self.reverse else ''}{'' if self.bias else '-nobias'}"
        )


CASES = [
    case
    for kind in ("lstm", "gru")
    for case in (
        Case(kind, 1, 1, 3, 4),
        Case(kind, 3, 200, 2, 3, reverse=True),
        Case(kind, 5, 7, 4, 5, bias=False),
        Case(kind, 1, 6, 3, 2, reverse=True),
    )
]


def build(rng: np.random.Generator, case: Case, dtype: DType) -> dict[str, Any]:
    width = GATES[case.kind] * case.hidden
    shapes = {
        "x": (case.batch, case.seq, case.d_input),
        "h0": (case.batch, case.hidden),
        "c0": (case.batch, case.hidden),
        "weight_ih": (case.d_input, width),
        "weight_hh": (case.hidden, width),
        "bias_ih": (width,),
        "bias_hh": (width,),
        "grad_output": (case.batch, case.seq, case.hidden),
        "grad_h": (case.batch, case.hidden),
        "grad_c": (case.batch, case.hidden),
    }
    arrays = {name: random_array(rng, shape, dtype, -0.8, 0.8) for name, shape in shapes.items()}
    if case.kind == "gru":
        del arrays["c0"], arrays["grad_c"]
    if not case.bias:
        del arrays["bias_ih"], arrays["bias_hh"]
    return arrays


def torch_reference(case: Case, arrays: dict[str, Any]) -> dict[str, Any]:
    """PyTorch's layer in float64: outputs and the gradients of every input."""
    torch = torch_module()
    t = {n: torch.tensor(a.astype(np.float64), requires_grad=True) for n, a in arrays.items()}
    layer_type = torch.nn.LSTM if case.kind == "lstm" else torch.nn.GRU
    layer = layer_type(case.d_input, case.hidden, bias=case.bias, batch_first=True).double()
    params = dict(layer.named_parameters())
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            if name in t:
                params[f"{name}_l0"].copy_(t[name].T if name.startswith("weight") else t[name])
    x = t["x"].flip(1) if case.reverse else t["x"]
    if case.kind == "lstm":
        output, (h_n, c_n) = layer(x, (t["h0"][None], t["c0"][None]))
    else:
        output, h_n = layer(x, t["h0"][None])
    output = output.flip(1) if case.reverse else output
    loss = (output * t["grad_output"]).sum() + (h_n[0] * t["grad_h"]).sum()
    if case.kind == "lstm":
        loss = loss + (c_n[0] * t["grad_c"]).sum()
    loss.backward()
    result = {"output": output.detach().numpy(), "h_n": h_n[0].detach().numpy()}
    if case.kind == "lstm":
        result["c_n"] = c_n[0].detach().numpy()
    for name in ("x", "h0", "c0"):
        if name in t:
            result[f"d_{name}"] = t[name].grad.numpy()
    for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
        if name in t:
            result[f"d_{name}"] = params[f"{name}_l0"].grad.numpy().T  # .T of a 1-d array is itself
    return result


INPUTS = ("x", "h0", "c0", "weight_ih", "weight_hh", "bias_ih", "bias_hh")


def ours(case: Case, tensors: dict[str, Tensor]) -> dict[str, Tensor]:
    weights = (tensors["weight_ih"], tensors["weight_hh"], tensors.get("bias_ih"), tensors.get("bias_hh"))
    if case.kind == "lstm":
        output, h_n, c_n = module.lstm(tensors["x"], tensors["h0"], tensors["c0"], *weights, case.reverse)
        return {"output": output, "h_n": h_n, "c_n": c_n}
    output, h_n = module.gru(tensors["x"], tensors["h0"], *weights, case.reverse)
    return {"output": output, "h_n": h_n}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_rnn_values_and_gradients(device: Device, rng: np.random.Generator, case: Case, dtype: DType) -> None:
    require_dtype(device, dtype)
    arrays = build(rng, case, dtype)
    expected = torch_reference(case, arrays)
    tracking = device.backend.ad_enabled()
    tensors = {n: make(a, device) for n, a in arrays.items()}
    if tracking:
        tensors.update({n: t.require_grad() for n, t in tensors.items() if n in INPUTS})
    results = ours(case, tensors)
    for name, result in results.items():
        check(result, expected[name], dtype, scale=20)
    if not tracking:
        return
    loss = (results["output"] * tensors["grad_output"]).sum() + (results["h_n"] * tensors["grad_h"]).sum()
    if case.kind == "lstm":
        loss = loss + (results["c_n"] * tensors["grad_c"]).sum()
    grads = loss.backward()
    for name in INPUTS:
        if name in tensors:
            check(tensors[name].grad(grads), expected[f"d_{name}"], dtype, scale=50)


@pytest.mark.parametrize("case", [CASES[1], CASES[2], CASES[5], CASES[6]], ids=str)
def test_rnn_kernels_match_the_composed_default(device: Device, rng: np.random.Generator, case: Case) -> None:
    """The backend's forward and backward ops (kernels where it has them) against the interface's
    defaults, the backward ops fed the same states, workspace and gradient."""
    require_dtype(device, DType.F64)
    arrays = build(rng, case, DType.F64)
    t = {n: make(a, device) for n, a in arrays.items()}
    states = ("h0", "c0") if case.kind == "lstm" else ("h0",)
    args: list[Any] = [t["x"], *(t[s] for s in states), t["weight_ih"], t["weight_hh"]]
    args += [t.get("bias_ih"), t.get("bias_hh"), case.reverse]
    ours_forward, reference = kernel(device, case.kind, *args), default(device, case.kind, *args)
    check(ours_forward[0], reference[0].to_numpy(), DType.F64)  # (states, workspace)
    width = reference[0].dims()[2]
    grad = make(random_array(rng, (case.batch, case.seq, width), DType.F64), device)
    backward = f"{case.kind}_backward"
    ours_grads = kernel(device, backward, *args, *ours_forward, grad)
    reference_grads = default(device, backward, *args, *reference, grad)
    for got, want in zip(ours_grads, reference_grads):
        assert (got is None) == (want is None)
        if want is not None:
            check(got, want.to_numpy(), DType.F64)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_two_layer_bidirectional_stack(device: Device, rng: np.random.Generator, kind: str) -> None:
    """Two bidirectional layers made of the one-direction ops (outputs joined along the features),
    against ``torch.nn.LSTM/GRU(num_layers=2, bidirectional=True)``: values and the input gradient."""
    torch = torch_module()
    batch, seq, d_input, hidden = 3, 5, 4, 3
    layer_type = torch.nn.LSTM if kind == "lstm" else torch.nn.GRU
    reference = layer_type(d_input, hidden, num_layers=2, bidirectional=True, batch_first=True).double()
    with torch.no_grad():
        for param in reference.parameters():
            param.copy_(torch.tensor(random_array(rng, param.shape, DType.F64, -0.7, 0.7)))
    x_array = random_array(rng, (batch, seq, d_input), DType.F64)
    grad_array = random_array(rng, (batch, seq, 2 * hidden), DType.F64)
    x_torch = torch.tensor(x_array, requires_grad=True)
    (reference(x_torch)[0] * torch.tensor(grad_array)).sum().backward()
    tracking = device.backend.ad_enabled()
    x = make(x_array, device)
    x = x.require_grad() if tracking else x
    layer_input = x
    zeros = Tensor.zeros([batch, hidden], device, x.dtype)
    for layer in range(2):
        outputs = []
        for suffix, reverse in (("", False), ("_reverse", True)):
            w_ih, w_hh, b_ih, b_hh = [
                make(
                    np.ascontiguousarray(getattr(reference, f"{name}_l{layer}{suffix}").detach().numpy().T),
                    device,
                )
                for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
            ]
            if kind == "lstm":
                outputs.append(module.lstm(layer_input, zeros, zeros, w_ih, w_hh, b_ih, b_hh, reverse)[0])
            else:
                outputs.append(module.gru(layer_input, zeros, w_ih, w_hh, b_ih, b_hh, reverse)[0])
        layer_input = Tensor.cat(outputs, 2)
    check(layer_input, reference(x_torch)[0].detach().numpy(), DType.F64)
    if tracking:
        grads = (layer_input * make(grad_array, device)).sum().backward()
        assert x_torch.grad is not None
        check(x.grad(grads), x_torch.grad.numpy(), DType.F64)


def test_rnn_errors(device: Device) -> None:
    x = Tensor.zeros([2, 3, 4], device)
    h = Tensor.zeros([2, 5], device)
    w_ih, w_hh = Tensor.zeros([4, 20], device), Tensor.zeros([5, 20], device)
    with pytest.raises(ValueError, match=r"lstm: x must have shape \[batch, seq, d_input\]"):
        module.lstm(Tensor.zeros([2, 4], device), h, h, w_ih, w_hh)
    with pytest.raises(ValueError, match=r"lstm: x must have shape .* seq >= 1, got \[2, 0, 4\]"):
        module.lstm(Tensor.zeros([2, 0, 4], device), h, h, w_ih, w_hh)
    with pytest.raises(ValueError, match=r"lstm: weight_ih has shape \[3, 20\], expected \[4, 20\]"):
        module.lstm(x, h, h, Tensor.zeros([3, 20], device), w_hh)
    with pytest.raises(ValueError, match=r"lstm: c0 has shape \[2, 4\], expected \[2, 5\]"):
        module.lstm(x, h, Tensor.zeros([2, 4], device), w_ih, w_hh)
    with pytest.raises(ValueError, match=r"gru: weight_hh has shape \[5, 20\], expected \[5, 15\]"):
        module.gru(x, h, Tensor.zeros([4, 15], device), Tensor.zeros([5, 20], device))
    with pytest.raises(ValueError, match=r"gru: bias_hh has shape \[4\], expected \[15\]"):
        module.gru(
            x,
            h,
            Tensor.zeros([4, 15], device),
            Tensor.zeros([5, 15], device),
            None,
            Tensor.zeros([4], device),
        )
    with pytest.raises(TypeError, match=r"lstm: h0 must be a Float tensor"):
        module.lstm(x, Tensor.zeros([2, 5], device).int(), h, w_ih, w_hh)
