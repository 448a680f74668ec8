"""FP8 inference with Habana's Quantization Toolkit (HQT), as its documentation shows it:
measure with a MEASURE config, then quantize with a QUANTIZE config (`QUANT_CONFIG`), on an
MLP. Prints the stats files HQT wrote, the patched modules and the FP8 error against fp32.

    python hqt_fp8_inference.py WORKDIR
"""

import json
import os
import sys

import habana_frameworks.torch.core as htcore
import habana_quantization_toolkit as hqt
import torch

workdir = sys.argv[1]


def use_config(mode: str) -> None:
    config = {"method": "HOOKS", "mode": mode, "observer": "maxabs"}
    config["dump_stats_path"] = os.path.join(workdir, "hqt", "stats")
    if mode == "QUANTIZE":
        config["scale_method"] = "maxabs_hw"
    path = os.path.join(workdir, f"{mode.lower()}.json")
    with open(path, "w") as f:
        json.dump(config, f)
    os.environ["QUANT_CONFIG"] = path


def mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    layers = [torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 16)]
    return torch.nn.Sequential(*layers).eval()


x = torch.randn(32, 64, generator=torch.Generator().manual_seed(1))
reference = mlp()(x)

use_config("MEASURE")
model = mlp().to("hpu")
hqt.prep_model(model)
with torch.no_grad():
    for _ in range(3):
        model(x.to("hpu"))
        htcore.mark_step()
hqt.finish_measurements(model)
print("stats", sorted(os.listdir(os.path.join(workdir, "hqt"))))

use_config("QUANTIZE")
model = mlp().to("hpu")
hqt.prep_model(model)
print("patched", [type(m).__name__ for m in model])
with torch.no_grad():
    out = model(x.to("hpu"))
    htcore.mark_step()
error = (out.float().cpu() - reference).abs().max().item()
print(json.dumps({"max_abs_error": error, "reference_max": reference.abs().max().item()}))
