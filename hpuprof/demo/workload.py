"""A small transformer on the (emulated) Gaudi, written the way Gaudi scripts are written.

It deliberately contains the problems hpuprof looks for:
- lazy mode with variable-length batches: every new sequence length is a new graph (recompiles);
- bf16 autocast (`torch.autocast(device_type="hpu", dtype=torch.bfloat16)`);
- an op with no HPU kernel (`torch.digamma`) that falls back to the CPU;
- `loss.item()` inside the loop: a host sync every step;
- then inference with `wrap_in_hpu_graph` (HPU graph capture, then replays).

Pieces the runtime does not provide yet (autocast on `hpu`, HPU graphs) are skipped with a
note in `Notes.skipped` rather than failing the demo. Fixed seeds: the same ops every run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

SEQ_LENS = (16, 24, 16, 32, 24, 40, 16, 32)
"""Variable-length training batches: 4 distinct shapes, so lazy mode compiles 4 graphs."""
BATCH = 4
VOCAB = 64
D_MODEL = 32
INFER_STEPS = 4


@dataclass
class Notes:
    """What the workload did, for the demo's printout."""

    steps: int = 0
    losses: list[float] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def build_model() -> Any:
    import torch
    from torch import nn

    class TinyTransformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(VOCAB, D_MODEL)
            layer = nn.TransformerEncoderLayer(
                D_MODEL, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True
            )
            self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
            self.head = nn.Linear(D_MODEL, VOCAB)

        def forward(self, tokens: torch.Tensor) -> torch.Tensor:
            hidden = self.encoder(self.embed(tokens))
            if not self.training:  # HPU graphs cannot capture a CPU fallback: serve without it
                return self.head(hidden)
            # digamma has no HPU kernel: the bridge runs it on the CPU (a fallback)
            gate = torch.digamma(hidden.float().abs() + 1.0).mean()
            return self.head(hidden) * torch.sigmoid(gate)

    return TinyTransformer()


def _autocast(device: Any, notes: Notes) -> contextlib.AbstractContextManager[Any]:
    import torch

    try:
        ctx = torch.autocast(device_type=device.type, dtype=torch.bfloat16)
        ctx.__enter__()
        ctx.__exit__(None, None, None)
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    except (RuntimeError, ValueError, AttributeError) as error:
        notes.skipped.append(f"bf16 autocast on {device.type}: {error}")
        return contextlib.nullcontext()


@contextlib.contextmanager
def _step_marker() -> Iterator[Any]:
    try:
        import habana_frameworks.torch.core as htcore
    except ImportError:
        yield None
        return
    yield htcore


def train(model: Any, device: Any, notes: Notes) -> None:
    import torch

    torch.manual_seed(0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    with _step_marker() as htcore:
        for seq_len in SEQ_LENS:
            tokens = torch.randint(0, VOCAB, (BATCH, seq_len)).to(device)
            targets = torch.randint(0, VOCAB, (BATCH, seq_len)).to(device)
            with _autocast(device, notes):
                logits = model(tokens)
                loss = loss_fn(logits.float().reshape(-1, VOCAB), targets.reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if htcore is not None:
                htcore.mark_step()
            optimizer.step()
            if htcore is not None:
                htcore.mark_step()
            notes.losses.append(loss.item())  # host sync inside the loop
            notes.steps += 1


def infer(model: Any, device: Any, notes: Notes) -> None:
    import torch

    model.eval()
    try:
        from habana_frameworks.torch.hpu import wrap_in_hpu_graph

        model = wrap_in_hpu_graph(model)
    except (ImportError, AttributeError, RuntimeError) as error:
        notes.skipped.append(f"wrap_in_hpu_graph: {error}")
    tokens = torch.randint(0, VOCAB, (BATCH, 16)).to(device)
    with torch.no_grad():
        for _ in range(INFER_STEPS):
            out = model(tokens)
    out.cpu()


def main(device_name: str = "hpu") -> Notes:
    """Train then serve the tiny transformer on `device_name`; returns what happened."""
    import torch

    torch.manual_seed(0)
    notes = Notes()
    device = torch.device(device_name)
    model = build_model().to(device)
    model.train()
    train(model, device, notes)
    infer(model, device, notes)
    return notes


if __name__ == "__main__":
    import sys

    result = main(sys.argv[1] if len(sys.argv) > 1 else "hpu")
    print(f"{result.steps} steps, last loss {result.losses[-1]:.3f}")
