"""HPU graphs for training in the style of the Gaudi docs: a whole training step captured with
`HPUGraph` on a side `Stream` and replayed with new data copied into the static inputs, then
`make_graphed_callables` on a module (followed by Lightning's second `.to("hpu")`)."""

import habana_frameworks.torch as ht
import habana_frameworks.torch.core as htcore
import torch

torch.manual_seed(0)
N, D_in, H, D_out = 16, 8, 32, 4
model = torch.nn.Sequential(
    torch.nn.Linear(D_in, H), torch.nn.ReLU(), torch.nn.Linear(H, D_out)
).to("hpu")
loss_fn = torch.nn.MSELoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

static_input = torch.randn(N, D_in, device="hpu")
static_target = torch.randn(N, D_out, device="hpu")

s = ht.hpu.Stream()
with ht.hpu.stream(s):
    g = ht.hpu.HPUGraph()
    optimizer.zero_grad(set_to_none=True)
    g.capture_begin()
    static_y_pred = model(static_input)
    static_loss = loss_fn(static_y_pred, static_target)
    static_loss.backward()
    optimizer.step()
    g.capture_end()

real_inputs = [torch.rand_like(static_input) for _ in range(5)]
real_targets = [torch.rand_like(static_target) for _ in range(5)]
losses = []
for data, target in zip(real_inputs, real_targets, strict=True):
    static_input.copy_(data)
    static_target.copy_(target)
    g.replay()
    losses.append(static_loss.item())
print("replayed losses", [round(v, 4) for v in losses])
assert len(set(losses)) > 1, "replays must see the new inputs"

# make_graphed_callables, then moving the module again (what Lightning's fit does)
module = torch.nn.Linear(D_in, D_out).to("hpu")
x = torch.randn(N, D_in, device="hpu", requires_grad=True)
module = ht.hpu.make_graphed_callables(module, (x,))
module.to("hpu")
out = module(x)
out.sum().backward()
htcore.mark_step()
print("graphed callable grad", tuple(module.weight.grad.shape))
