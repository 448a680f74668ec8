"""PyPI's torchvision (a CUDA build) under emulation (issue 24): its import completes beside the
CPU torch, its datasets, transforms and models train on the emulated device, its compiled ops
say they are missing, and outside emulation nothing of it is on `sys.path`."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hpusim.torchvision_ops import FOLDER_NAME

FOLDER = Path(sys.prefix) / FOLDER_NAME

SCRIPT = textwrap.dedent(
    """
    import sys
    import hpusim
    hpusim.enable(mode="lazy")
    import torch
    import torchvision
    from torchvision import datasets, models, transforms
    import habana_frameworks.torch.core as htcore

    print("version", torchvision.__version__, torchvision.__file__)
    data = datasets.FakeData(size=4, image_size=(3, 32, 32), num_classes=10,
                             transform=transforms.Compose([transforms.ToTensor(),
                             transforms.Normalize((0.5,) * 3, (0.25,) * 3)]))
    loader = torch.utils.data.DataLoader(data, batch_size=4)
    model = models.resnet18(num_classes=10).to("hpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for images, labels in loader:
        loss = torch.nn.functional.cross_entropy(model(images.to("hpu")), labels.to("hpu"))
        loss.backward()
        htcore.mark_step()
        opt.step()
        htcore.mark_step()
        print("loss", loss.device, float(loss.cpu()))
    # a worker started with "spawn" imports torchvision (unpickling the dataset) before any
    # emulator: the shim's sitecustomize gives it the same import hook
    spawned = torch.utils.data.DataLoader(data, batch_size=4, num_workers=1,
                                          multiprocessing_context="spawn")
    print("spawned", [tuple(images.shape) for images, _ in spawned])
    try:
        torchvision.ops.nms(torch.rand(3, 4), torch.rand(3), 0.5)
    except RuntimeError as error:
        print("nms", str(error).splitlines()[0])
    hpusim.disable()
    print("on path after disable", any(p.endswith("hpusim-torchvision") for p in sys.path))
    """
)


@pytest.mark.skipif(
    not FOLDER.is_dir(), reason=f"{FOLDER} is not installed (make test installs it)"
)
def test_pypis_torchvision_trains_on_the_emulated_device(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=tmp_path, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    version = next(line for line in lines if line.startswith("version "))
    assert str(FOLDER) in version  # the wheel set aside for emulation, not a stand-in
    losses = [line.split() for line in lines if line.startswith("loss ")]
    assert len(losses) == 1 and all(d == "hpu:0" and 0 < float(v) < 20 for _, d, v in losses)
    assert "spawned [(4, 3, 32, 32)]" in lines
    assert any(line.startswith("nms Couldn't load custom C++ ops") for line in lines), lines
    assert "on path after disable False" in lines


def test_ops_are_declared_only_when_torchvisions_library_does_not_load(tmp_path: Path) -> None:
    broken = tmp_path / "torchvision" / "_C.so"
    broken.parent.mkdir()
    broken.write_bytes(b"not a shared library")
    code = textwrap.dedent(
        f"""
        import importlib.machinery, torch
        from hpusim.torchvision_ops import declare_missing_ops, ops_library
        spec = importlib.machinery.ModuleSpec("torchvision", None, is_package=True)
        spec.submodule_search_locations = [{str(broken.parent)!r}]
        assert ops_library(spec).name == "_C.so"
        assert not hasattr(torch.ops.torchvision, "nms")
        print(declare_missing_ops(ops_library(spec)), declare_missing_ops(None))
        print(torch.ops.torchvision.nms.default._schema)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    first, schema = out.stdout.splitlines()[-2:]
    assert first == "True False"  # declared once
    assert schema == "torchvision::nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"


def test_the_shims_sitecustomize_serves_torchvision_and_runs_the_one_it_shadows(
    tmp_path: Path,
) -> None:
    from hpusim.environment import shim_root

    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.shadowed_ran = True\n")
    code = (
        "import sys; print(getattr(sys, 'shadowed_ran', False), "
        "any(p.endswith('hpusim-torchvision') for p in sys.path), 'torch' in sys.modules)"
    )
    env = {"PYTHONPATH": f"{shim_root()}:{tmp_path}", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", str(FOLDER.is_dir()), "False"]  # torch not imported
