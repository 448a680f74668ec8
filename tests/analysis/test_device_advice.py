"""Advice follows the trace's device: every shared real trace and every sample is analysed
and no finding tells a CUDA / ROCm / CPU trace about Gaudi, nor a Gaudi trace about CUDA."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest

import hpuprof
from hpuprof.analysis import analyze
from hpuprof.analysis.advice import ADVICE
from hpuprof.analysis.device import DeviceKind, trace_device
from hpuprof.errors import TraceFormatError
from tests.conftest import SAMPLE_TRACES, shared_trace_files

HPU_WORDS = re.compile(r"\bhpu\b|mark_step|gaudi|habana|PT_HPU|hpu_graph|HPU graph|\bTPC\b|\bMME\b", re.I)  # fmt: skip
GPU_WORDS = re.compile(r"cuda|\bHIP\b|ROCm|nccl|cudnn|GradScaler", re.I)
KINDS = typing.get_args(DeviceKind)


def _wrong_words(kind: str) -> re.Pattern[str]:
    return GPU_WORDS if kind == "hpu" else HPU_WORDS


def test_every_topic_says_something_or_nothing_for_every_device() -> None:
    for topic, per_device in ADVICE.items():
        assert set(per_device) == set(KINDS), topic
        for kind, text in per_device.items():
            if text is not None:
                assert not _wrong_words(kind).search(text), (topic, kind, text)


def _samples() -> list[Path]:
    if not SAMPLE_TRACES.is_dir():
        return []
    return sorted(p for p in SAMPLE_TRACES.iterdir() if p.is_dir() and p.name != "workloads")


@pytest.mark.parametrize(
    "path", shared_trace_files() + _samples(), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_no_finding_speaks_of_another_device(path: Path) -> None:
    try:
        trace = hpuprof.load(path)
    except TraceFormatError:
        pytest.skip("not a trace (execution trace / memory timeline)")
    device = trace_device(trace)
    report = analyze(trace)
    wrong = _wrong_words(device.kind)
    for f in report.findings:
        assert not wrong.search(f.title + " " + f.advice), (device.label, f.title, f.advice)
    assert report.meta["device"]["kind"] == device.kind


@pytest.mark.parametrize(
    ("relative", "kind"),
    [
        ("tests/data/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", "rocm"),
        ("tests/data/nccl_parser_config/nccl_data.json.gz", "cuda"),
        ("tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", "cpu"),
        ("tests/data/mtia_inference_trace/mtia_inference_rank_0.json.gz", "mtia"),
        ("tests/data/trace_filter/sampled_rank-0.json.gz", "cuda"),
    ],
)
def test_device_of_real_traces(shared_kineto_dir: Path, relative: str, kind: str) -> None:
    assert trace_device(hpuprof.load(shared_kineto_dir / relative)).kind == kind


@pytest.mark.skipif(not SAMPLE_TRACES.is_dir(), reason="sample_traces/ not present")
def test_emulated_samples_are_emulated_gaudis_on_the_projected_timeline() -> None:
    device = trace_device(hpuprof.load(SAMPLE_TRACES / "emulated_gaudi3_lazy"))
    assert (device.kind, device.emulated, device.timeline) == ("hpu", True, "projected")
    assert device.label == "Gaudi 3 (emulated)"
