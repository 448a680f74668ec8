"""HPU graphs for inference in the style of the Gaudi docs: `wrap_in_hpu_graph`, `ModuleCacher`
with dynamic control flow, and a dynamic op between two cached modules."""

import habana_frameworks.torch as ht
import habana_frameworks.torch.core as htcore
import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.module1 = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
        self.module2 = torch.nn.Linear(8, 8)
        self.module3 = torch.nn.Linear(8, 2)

    def forward(self, x, use_module2):
        x = self.module1(x)
        if use_module2:  # dynamic control flow: kept outside the cached modules
            x = self.module2(x)
        x = x[x.sum(dim=1) > -1e9]  # a dynamic op (boolean mask) between two cached modules
        return self.module3(x)


torch.manual_seed(0)
with torch.no_grad():
    wrapped = ht.hpu.wrap_in_hpu_graph(torch.nn.Linear(8, 2).to("hpu").eval())
    for _ in range(3):
        y = wrapped(torch.randn(4, 8, device="hpu"))
    print("wrap_in_hpu_graph", tuple(y.shape))

    net = Net().to("hpu").eval()
    net.module1 = ht.hpu.ModuleCacher(max_graphs=10)(model=net.module1, inplace=True)
    net.module3 = ht.hpu.ModuleCacher(max_graphs=10)(model=net.module3, inplace=True)
    outs = []
    for step in range(4):
        out = net(torch.randn(4, 8, device="hpu"), use_module2=step % 2 == 0)
        htcore.mark_step()
        outs.append(tuple(out.cpu().shape))
    print("ModuleCacher", outs)
