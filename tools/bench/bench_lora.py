"""LoRA fine-tuning against full fine-tuning of the same transformer, side by side in one run.

A causal language model (an embedding, burn-nn's ``TransformerEncoder`` of 6 layers, d_model 512, d_ff
2048, 8 heads, under a causal mask, and a linear head) trains on synthetic token sequences (a Markov
chain: the next token is a fixed permutation of the current one 90% of the time, else uniform) twice
from the same initial weights and batches: every parameter with Adam (full fine-tuning), and with
``apply_lora(LoraConfig(8, 16, targets=("*.query", "*.key", "*.value", "*.output")))`` (rank 8 on the
attention projections, everything else frozen). Printed: the trainable parameters of each side, the
optimizer state each keeps (the bytes of ``ModuleOptimizer.into_record()``), step times, and both loss
curves. Targets (issue 41): trainable parameters <= 2% of the model, optimizer state <= 5% of full
fine-tuning's, and the loss falling with LoRA as with full fine-tuning.

LoRA takes a larger learning rate than full fine-tuning (5e-3 against 1e-3 here), as usual: its update
starts from zero and is scaled by ``alpha / rank``.

Run: ``python tools/bench/bench_lora.py [--quick] [--steps N] [--full-lr X] [--lora-lr X]`` (``--quick``:
d_model 128, d_ff 512).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from burn_autodiff import Autodiff
from burn_backend import Device, DType, Tensor
from burn_ndarray import NdArray
from burn_nn import (
    Embedding,
    EmbeddingConfig,
    Linear,
    LinearConfig,
    LoraConfig,
    Module,
    TransformerEncoder,
    TransformerEncoderConfig,
    TransformerEncoderInput,
    generate_autoregressive_mask,
)
from burn_nn.loss import CrossEntropyLoss, CrossEntropyLossConfig
from burn_nn.optim import AdamConfig, GradientsParams, ModuleOptimizer


class LanguageModel(Module):
    """Tokens ``[batch, seq]`` to next-token logits ``[batch * seq, vocab]``."""

    def __init__(self, vocab: int, d_model: int, d_ff: int, n_layers: int, device: Device) -> None:
        self.embedding: Embedding = EmbeddingConfig(vocab, d_model).init(device)
        self.encoder: TransformerEncoder = TransformerEncoderConfig(
            d_model=d_model, d_ff=d_ff, n_heads=8, n_layers=n_layers, dropout=0.0, norm_first=True
        ).init(device)
        self.head: Linear = LinearConfig(d_model, vocab).init(device)
        self.vocab = vocab

    def forward(self, tokens: Tensor) -> Tensor:
        batch, seq = tokens.dims()
        mask = generate_autoregressive_mask(batch, seq, tokens.device)
        hidden = self.encoder(TransformerEncoderInput(self.embedding(tokens)).mask_attn(mask))
        return self.head(hidden).reshape([batch * seq, self.vocab])


@dataclass
class Run:
    name: str
    losses: list[float]
    step_s: float
    trainable: int
    state_bytes: int


def batches(vocab: int, batch: int, seq: int, steps: int, seed: int) -> list[np.ndarray]:
    """``steps`` batches of ``[batch, seq + 1]`` tokens from the Markov chain."""
    rng = np.random.default_rng(seed)
    permutation = rng.permutation(vocab)
    out = []
    for _ in range(steps):
        tokens = np.empty((batch, seq + 1), np.int64)
        tokens[:, 0] = rng.integers(0, vocab, batch)
        for t in range(1, seq + 1):
            follow = rng.random(batch) < 0.9
            tokens[:, t] = np.where(follow, permutation[tokens[:, t - 1]], rng.integers(0, vocab, batch))
        out.append(tokens)
    return out


def state_bytes(optim: ModuleOptimizer) -> int:
    """The bytes of the optimizer's tensors (its moments), as its record holds them."""
    total = 0
    for state in optim.into_record().values():
        for value in state.values():
            if not isinstance(value, int):
                total += value.to_numpy().nbytes
    return total


def train(name: str, model: LanguageModel, data: list[np.ndarray], lr: float, device: Device) -> Run:
    loss_fn: CrossEntropyLoss = CrossEntropyLossConfig().init(device)
    optim = AdamConfig().init()
    trainable = sum(p.num_elements() for p in model.params() if p.require_grad)
    losses, times = [], []
    for tokens in data:
        start = time.perf_counter()
        inputs = Tensor.from_data(tokens[:, :-1], device, DType.I64)
        targets = Tensor.from_data(tokens[:, 1:].reshape(-1), device, DType.I64)
        loss = loss_fn(model(inputs), targets)
        grads = GradientsParams.from_grads(loss.backward(), model)
        model = optim.step(lr, model, grads)
        losses.append(loss.into_scalar())
        times.append(time.perf_counter() - start)
    return Run(name, losses, float(np.median(times)), trainable, state_bytes(optim))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="d_model 128, d_ff 512 (a small machine)")
    parser.add_argument("--steps", type=int, default=60, help="optimizer steps of each side")
    parser.add_argument("--full-lr", type=float, default=1e-3, help="Adam's rate, full fine-tuning")
    parser.add_argument("--lora-lr", type=float, default=5e-3, help="Adam's rate, LoRA")
    args = parser.parse_args()
    d_model, d_ff = (128, 512) if args.quick else (512, 2048)
    vocab, batch, seq, n_layers = 128, 8, 32, 6

    device = Autodiff(NdArray()).device()
    device.seed(0)
    base = LanguageModel(vocab, d_model, d_ff, n_layers, device)
    for param in base.params():
        param.val()  # both sides start from the same drawn weights
    data = batches(vocab, batch, seq, args.steps, seed=1)
    total = base.num_params()

    lora_config = LoraConfig(8, 16.0, targets=("*.query", "*.key", "*.value", "*.output"))
    full = train("full fine-tuning", base, data, args.full_lr, device)
    lora = train("LoRA rank 8", base.apply_lora(lora_config), data, args.lora_lr, device)

    print(f"model: {n_layers} layers, d_model {d_model}, d_ff {d_ff}, vocab {vocab}; {total:,} parameters")
    print(f"batch {batch} x seq {seq}; {args.steps} Adam steps per side", end=" ")
    print(f"(full fine-tuning lr {args.full_lr:g}, LoRA lr {args.lora_lr:g})")
    print()
    print(f"{'':18} {'trainable':>12} {'% of model':>10} {'optim state':>12} {'step (s)':>9}")
    for run in (full, lora):
        share, mib = 100.0 * run.trainable / total, run.state_bytes / 2**20
        print(f"{run.name:18} {run.trainable:12,} {share:9.2f}% {mib:9.2f} MiB {run.step_s:9.3f}")
    print()
    trainable_share = lora.trainable / total
    state_share = lora.state_bytes / full.state_bytes
    print(f"LoRA trainable / model parameters: {100 * trainable_share:.2f}% (target <= 2%)")
    print(f"LoRA optimizer state / full fine-tuning's: {100 * state_share:.2f}% (target <= 5%)")
    print()
    print(f"{'step':>4} {'full loss':>10} {'LoRA loss':>10}")
    for step in range(0, args.steps, max(1, args.steps // 20)):
        print(f"{step:4d} {full.losses[step]:10.4f} {lora.losses[step]:10.4f}")
    print(f"{args.steps - 1:4d} {full.losses[-1]:10.4f} {lora.losses[-1]:10.4f}")
    tail = max(1, args.steps // 8)
    for run in (full, lora):
        first, last = np.mean(run.losses[:tail]), np.mean(run.losses[-tail:])
        print(f"{run.name}: mean loss of the first {tail} steps {first:.4f}, of the last {tail} {last:.4f}")


if __name__ == "__main__":
    main()
