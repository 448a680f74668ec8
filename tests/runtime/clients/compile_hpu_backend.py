"""torch.compile with the bridge's dynamo backend, as in the Gaudi docs."""

import habana_frameworks.torch.core as htcore  # noqa: F401
import torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).to(
    "hpu"
)
compiled = torch.compile(model, backend="hpu_backend")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _ in range(3):
    loss = compiled(torch.randn(8, 16, device="hpu")).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
print("compiled loss", round(loss.item(), 4))
