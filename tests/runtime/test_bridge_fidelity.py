"""Behaviours where the emulator followed its own idea of the bridge and now follows the 1.19
source (issue 24, "Where the emulator still differs"); each test names the bridge lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.conftest import runtime_events

torch = pytest.importorskip("torch")


def test_engine_lanes_are_the_bridge_parsers_tids(hpu: Any, tmp_path: Path) -> None:
    """trace_parser.cpp:54-75 lists the Gaudi 1 engine types (`**DMA `, `**MME `, `**TPC `)
    before the Gaudi 2 ones, and :126 writes `typeIdx * 1000 + engineIndex`: on Gaudi 2 EDMA,
    MME and TPC are lanes 4000, 6000 and 7000. The loader still classifies them by name."""
    from hpusim.chrome_events import ENGINE_TIDS, metadata_events, to_chrome_events
    from hpusim.sink import get_sink

    import hpuprof

    assert ENGINE_TIDS == {"DMA": 4000, "MME": 6000, "TPC": 7000, "NIC": 14000}
    hpu("lazy")
    base = get_sink().now_epoch_ns()
    model = torch.nn.Linear(128, 128).to("hpu")
    model(torch.randn(128, 128).to("hpu")).relu().sum().backward()
    torch.hpu.synchronize()
    events = metadata_events(7) + to_chrome_events(get_sink().drain(), pid=7, base_ns=base)
    lanes = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {lanes[4000], lanes[6000], lanes[7000]} == {"EDMA 0", "MME 0", "TPC 0"}
    assert lanes[6000] == "MME 0" and lanes[7000] == "TPC 0"
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    trace = hpuprof.load(path)
    ev = trace.events
    device = ev[ev["pid"] == "0"]
    engines = device.groupby("tid", observed=True)["engine"].agg(lambda s: set(s.astype(str)))
    assert engines.get("6000") == {"MME"} and engines.get("7000") == {"TPC"}
    assert engines.get("4000", {"DMA"}) == {"DMA"}


def test_current_stream_synchronize_only_waits(hpu: Any) -> None:
    """HPUStream.cpp:148-158 (lazy): the current stream's `synchronize()` is
    `StepMarkerFinish` (waits for launched work, builds no graph); another stream's is a
    `StepMarker` ("step marker due to HPUStream::synchronize")."""
    from hpusim.sink import get_sink

    hpu("lazy")
    x = torch.ones(4, device="hpu")
    get_sink().drain()
    y = x * 2  # pending in the lazy graph
    torch.hpu.current_stream().synchronize()
    batch = get_sink().drain()
    assert runtime_events(batch, "graph_build") == []
    syncs = [e["name"] for e in runtime_events(batch, "sync")]
    assert syncs == ["sync (HPUStream::synchronize userthread)"]
    other = torch.hpu.Stream()
    other.synchronize()
    builds = runtime_events(get_sink().drain(), "graph_build")
    assert [b["hpuprof.flush_reason"] for b in builds] == ["HPUStream::synchronize"]
    assert y.cpu().tolist() == [2.0] * 4


@pytest.mark.parametrize(
    ("value", "expected"),
    [("b", 11), ("0x10", 16), ("010", 8), ("12", 12), ("", None)],
)
def test_numeric_flags_are_read_as_the_bridge_reads_them(value: str, expected: Any) -> None:
    """env_flags.cpp:306-396 `parse_env_numeric`: a value holding a-f is hex without its
    prefix, then `strtol(value, 0)` (a leading 0 is octal); empty is the default."""
    from hpusim.env import INT64_MAX, read_flags

    flags = read_flags({"PT_HPU_MAX_COMPOUND_OP_SIZE": value})
    assert flags.max_compound_op_size == (INT64_MAX if expected is None else expected)
    assert flags.fatal is None


@pytest.mark.parametrize(
    ("name", "value", "text"),
    [
        ("PT_HPU_LAZY_MODE", "true", '"PT_HPU_LAZY_MODE"="true" converted to different value "0"'
         " due to syntax error."),
        ("PT_HPU_MAX_COMPOUND_OP_SIZE", "1234asdf", 'converted to different value "74570" due to'),
        ("PT_ENABLE_INT64_SUPPORT", "yes", "\"=\"yes\" couldn't be converted properly"),
    ],
)  # fmt: skip
def test_unconvertible_flag_values_stop_the_bridge_import(
    hpu: Any, monkeypatch: pytest.MonkeyPatch, name: str, value: str, text: str
) -> None:
    """env_flags.cpp:273,359: PT_SYNHELPER_FATAL, a c10::Error thrown while the bridge loads:
    `import habana_frameworks.torch` raises RuntimeError; the emulator itself stays usable."""
    import importlib
    import sys

    hpu("lazy", **{name: value})
    monkeypatch.delitem(sys.modules, "habana_frameworks.torch", raising=False)  # restored after
    with pytest.raises(RuntimeError, match="FATAL ERROR :: MODULE:PT_SYNHELPER") as err:
        importlib.import_module("habana_frameworks.torch")
    assert text in str(err.value)


def test_lgamma_runs_on_the_device_through_its_out_kernel(hpu: Any) -> None:
    """hpu_op.yaml:3861 registers `lgamma.out` (guid gammaln_fwd); torch's structured
    CompositeExplicitAutogradNonFunctional `lgamma` / `lgamma_` call it: no CPU fallback."""
    from hpusim.fallback import is_missing, structured_out_name
    from hpusim.sink import get_sink

    assert structured_out_name("aten::lgamma_") == "lgamma.out"
    assert structured_out_name("aten::scatter_.reduce") == "scatter.reduce_out"
    assert not is_missing(torch.ops.aten.lgamma.default)
    assert not is_missing(torch.ops.aten.lgamma_.default)
    assert is_missing(torch.ops.aten.digamma.default)  # no digamma.out on HPU: still a fallback
    # a structured backward's out kernel is its `grad_input` overload (hpu_op.yaml:6874)
    assert not is_missing(torch.ops.aten._upsample_nearest_exact1d_backward.default)
    hpu("lazy")
    x = torch.rand(8, device="hpu") + 0.5
    get_sink().drain()
    y = torch.lgamma(x)
    x.lgamma_()
    assert torch.equal(y.cpu(), x.cpu())
    batch = get_sink().drain()
    assert runtime_events(batch, "fallback") == []
    torch.digamma(x)
    assert [e["name"] for e in runtime_events(get_sink().drain(), "fallback")]


def test_graph_replay_and_capture_begin_as_hpugraph_cpp(hpu: Any) -> None:
    """HPUGraph.cpp:36-43: `capture_begin` on a graph already capturing is PT_DEVICE_FATAL
    (logging.h:317-342 throws a c10::Error: RuntimeError); :195-212: `replay()` of a graph
    never captured is a step marker and nothing else; during its own capture it is fatal."""
    from hpusim.sink import get_sink

    hpu("lazy")
    import habana_frameworks.torch as ht

    g = ht.hpu.HPUGraph()
    x = torch.ones(4, device="hpu")
    y = x * 2  # pending
    get_sink().drain()
    g.replay()  # never captured: flushes the pending graph, replays nothing
    builds = runtime_events(get_sink().drain(), "graph_build")
    assert [b["hpuprof.flush_reason"] for b in builds] == ["HPUGraph::replay"]
    assert y.cpu().tolist() == [2.0] * 4
    g.capture_begin()
    try:
        with pytest.raises(
            RuntimeError,
            match="FATAL ERROR :: MODULE:PT_DEVICE GRAPH:: graph Capture already in progress",
        ):
            g.capture_begin()
        with pytest.raises(RuntimeError, match="GRAPH:: Capture in progress"):
            g.replay()
        z = x + 1
    finally:
        g.capture_end()
    g.replay()
    assert z.cpu().tolist() == [2.0] * 4


def test_a_second_graphs_capture_takes_the_capture_over(hpu: Any) -> None:
    """HPUGraph.cpp:36-64: `capture_begin` checks only its own graph; a second graph's begin
    inside a capture is a step marker and the context then captures into the second graph
    (`setCaptureGraph(this)`); ops after the inner `capture_end` are captured by neither."""
    hpu("lazy")
    import habana_frameworks.torch as ht

    outer, inner = ht.hpu.HPUGraph(), ht.hpu.HPUGraph()
    x = torch.ones(4, device="hpu")
    outer.capture_begin()
    a = x + 1  # outer's
    inner.capture_begin()  # no error
    b = x * 3  # inner's
    inner.capture_end()
    c = x - 1  # neither's: runs once, now
    outer.capture_end()
    assert outer.captured and inner.captured
    assert outer.device_op_count() == 1 and inner.device_op_count() == 1
    x.copy_(torch.full((4,), 2.0))
    outer.replay()
    assert a.cpu().tolist() == [3.0] * 4 and b.cpu().tolist() == [3.0] * 4
    inner.replay()
    assert b.cpu().tolist() == [6.0] * 4 and c.cpu().tolist() == [0.0] * 4


def _train_steps(batch_sizes: list[int]) -> list[dict[str, Any]]:
    """One lazy training step per batch size; the compile events of the steps."""
    import habana_frameworks.torch.core as htcore
    from hpusim.sink import get_sink

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    model = model.to("hpu")
    model(torch.randn(2, 16).to("hpu")).sum().backward()  # the first step's graph differs
    htcore.mark_step()
    get_sink().drain()
    for bs in batch_sizes:
        model(torch.randn(bs, 16).to("hpu")).sum().backward()
        htcore.mark_step()
    return [c for c in runtime_events(get_sink().drain(), "compile") if not c.get("hpuprof.eager")]


def test_refined_dynamic_shapes_bucket_the_batch_sizes(hpu: Any) -> None:
    """dynamic_shape_info.cpp:25-57 reads PT_HPU_ENABLE_REFINE_DYNAMIC_SHAPES into
    `get_dynamic_shape_status()`; dynamic_bucket_info.cpp (`GetBucketId`, `CalculateRanges`,
    default policies LOCAL_HISTORIC min / CALCULATED max = 2x the current size) then compiles
    a bucket for a range of sizes: 8 batch sizes 16..72 give 3 compiles, not 8."""
    sizes = [16, 24, 32, 40, 48, 56, 64, 72]
    hpu("lazy")
    import habana_frameworks.torch.hpu as hthpu

    assert hthpu.get_dynamic_shape_status() is False
    assert len(_train_steps(sizes)) == 8  # exact-shape recipes

    hpu("lazy", PT_HPU_ENABLE_REFINE_DYNAMIC_SHAPES="1")
    assert hthpu.get_dynamic_shape_status() is True
    compiles = _train_steps(sizes)
    # 16: bucket 0 (exact); 24: bucket 1 = [16, 48] holds 32, 40, 48; 56: [16, 112] holds 64, 72
    causes = [c["hpuprof.cause"] for c in compiles]
    assert [c.get("bucket") for c in causes] == [None, 1, 2]
    assert [c.get("ranges") for c in causes[1:]] == [[[16, 48]], [[16, 112]]]
    assert (
        causes[1]["kind"] == "shape" and "dynamic bucket 1, ranges [[16, 48]]" in causes[1]["text"]
    )
    hthpu.disable_dynamic_shape()
    assert hthpu.get_dynamic_shape_status() is False
    assert len(_train_steps([80, 88])) == 2  # off again: one recipe per shape


def test_dynamic_bucket_ranges_follow_the_default_policies() -> None:
    """`CalculateRanges`: a dimension that is 1 now is [1, 1] (broadcast handling); min is the
    smallest bucket-making value other than 1; a bucket made before a dimension turned dynamic
    needs that dimension at its reference value (`IsInRangeStaticDims`)."""
    from hpusim.dynamic_buckets import DynamicBucketInfo

    info = DynamicBucketInfo((8, 4))
    assert info.bucket_for((8, 4)) == (0, False)
    assert info.bucket_for((12, 4)) == (1, True)
    assert info.buckets[1].ranges == ((8, 24),)
    assert info.bucket_for((24, 4)) == (1, False)
    assert info.bucket_for((1, 4)) == (2, True)
    assert info.buckets[2].ranges == ((1, 1),)
    assert info.bucket_for((10, 5)) == (3, True)  # dim 1 turned dynamic: bucket 1 needs 4
    assert info.buckets[3].ranges == ((8, 20), (4, 10))
    assert info.bucket_for((9, 4)) == (1, False)  # narrowest holding bucket (score 16 < 22)
    assert info.bucket_for((9, 6)) == (3, False)


_SECOND_PROCESS = """
import hpusim
hpusim.enable(mode="lazy")
import torch
import habana_frameworks.torch.core as htcore
from habana_frameworks.torch.hpu.metrics import metric_global
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
model = model.to("hpu")
for bs in (8, 16):
    model(torch.randn(bs, 16).to("hpu")).sum().backward()
    htcore.mark_step()
stats = dict(metric_global("recipe_cache").stats())
print(dict(metric_global("graph_compilation").stats())["TotalNumber"], stats["TotalHit"])
"""


def test_on_disk_recipe_cache_serves_a_second_process(
    hpu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """recipe_cache_config.cpp:51-102: `PT_HPU_RECIPE_CACHE_CONFIG=<dir>,<delete>,<MB>` sets
    PT_RECIPE_CACHE_PATH / PT_CACHE_FOLDER_DELETE / PT_CACHE_FOLDER_SIZE_MB; recipe_cache.cpp
    creates the folder and stores `<hash><suffix>.recipe` + `.metadata` per compiled recipe;
    hpu_recipe_cache.cpp:128 finds a recipe on disk before compiling: a second process with
    the same setting compiles nothing of what the first compiled."""
    import subprocess
    import sys

    folder = tmp_path / "cache" / "recipes"
    config = f"{folder},true,1024"
    hpu("lazy", PT_HPU_RECIPE_CACHE_CONFIG=config, PT_HPU_ENABLE_CACHE_METRICS="1")
    from habana_frameworks.torch.internal import bridge_config

    assert bridge_config.get_pt_recipe_cache_path() == str(folder)
    assert bridge_config.get_pt_cache_folder_delete() is True
    assert bridge_config.get_pt_cache_folder_size_mb() == 1024
    assert folder.is_dir() and list(folder.iterdir()) == []
    code = _SECOND_PROCESS
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    compiles, hits = (int(v) for v in first.stdout.split()[-2:])
    assert (compiles, hits) == (2, 0), first.stderr[-2000:]  # the first and later steps
    recipes = sorted(p.name for p in folder.glob("*.recipe"))
    metadata = sorted(p.name for p in folder.glob("*.metadata"))
    assert len(recipes) == 2 and [r.replace(".recipe", ".metadata") for r in recipes] == metadata
    assert all(r.split("_")[-1] == "syn1.19.0-561ec20.recipe" for r in recipes)
    monkeypatch.setenv("PT_HPU_RECIPE_CACHE_CONFIG", f"{folder},false")  # keep the files
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert second.stdout.split()[-2:] == ["0", "2"], second.stderr[-2000:]
    hpu("lazy", PT_HPU_RECIPE_CACHE_CONFIG=config)  # delete on init: the folder is emptied
    assert list(folder.iterdir()) == []


def test_disk_cache_settings_and_eviction(tmp_path: Path) -> None:
    """The config's fields override the three older flags, an empty field keeps the flag,
    more than 3 fields is the bridge's assert; beyond 99 % of the size the oldest recipes go
    (base_cache_file_handler.cpp:117-176; 0 MB: never)."""
    from hpusim.disk_recipe_cache import DiskRecipeCache
    from hpusim.env import RecipeCacheConfig, read_flags

    old = {"PT_RECIPE_CACHE_PATH": "/old", "PT_CACHE_FOLDER_SIZE_MB": "b"}
    assert read_flags(old).recipe_cache == RecipeCacheConfig("/old", False, 11)
    both = {**old, "PT_HPU_RECIPE_CACHE_CONFIG": "/new,,"}
    assert read_flags(both).recipe_cache == RecipeCacheConfig("/new", False, 11)
    flags = read_flags({"PT_HPU_RECIPE_CACHE_CONFIG": "/a,true,1,extra"})
    assert flags.fatal is not None and "range <1:3>" in flags.fatal
    cache = DiskRecipeCache(RecipeCacheConfig(str(tmp_path / "c"), False, 1), "_s")
    for key in ("1", "2", "3"):
        cache.store(key, {"graph": "x" * 400_000}, {"recipe_id": key})
    assert cache.find("1") is None and cache.find("2") == {"recipe_id": "2"}
    assert cache.find("3") is not None
    unlimited = DiskRecipeCache(RecipeCacheConfig(str(tmp_path / "d"), False, 0), "")
    for key in ("1", "2", "3"):
        unlimited.store(key, {"graph": "x" * 400_000}, {"recipe_id": key})
    assert sorted(p.name for p in (tmp_path / "d").glob("*.recipe")) == [
        "1.recipe", "2.recipe", "3.recipe"
    ]  # fmt: skip


def test_event_record_and_synchronize_as_hpuevent_cpp(hpu: Any) -> None:
    """HPUEvent.cpp:82-100: recorded on the current stream in lazy mode an event is a step
    marker "due to HPUEvent::record"; on another stream it is not. :129-134: `synchronize()`
    waits for the event and builds no graph."""
    from hpusim.sink import get_sink

    hpu("lazy")
    x = torch.ones(4, device="hpu")
    get_sink().drain()
    y = x * 2
    other = torch.hpu.Stream()
    torch.hpu.Event().record(other)
    assert runtime_events(get_sink().drain(), "graph_build") == []
    event = torch.hpu.Event()
    event.record()
    builds = runtime_events(get_sink().drain(), "graph_build")
    assert [b["hpuprof.flush_reason"] for b in builds] == ["HPUEvent::record"]
    z = y + 1  # pending again
    event.synchronize()
    batch = get_sink().drain()
    assert runtime_events(batch, "graph_build") == []
    assert [e["name"] for e in runtime_events(batch, "sync")] == ["sync (HPUEvent::synchronize)"]
    assert z.cpu().tolist() == [3.0] * 4


def test_lazy_only_functions_log_at_import_outside_lazy_mode(
    hpu: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """core/step_closure.py:45-78 + utils/internal.py:34-46: outside lazy mode `mark_step`,
    `iter_mark_step` and `add_step_closure` become no-ops when the module is imported, each
    logged then on the `habana_frameworks.torch.utils.internal` logger (not a Python warning,
    and nothing when they are called)."""
    import importlib
    import logging
    import sys
    import warnings

    hpu("eager")
    import habana_frameworks.torch.core as core

    name = "habana_frameworks.torch.core.step_closure"
    monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(core, "step_closure", core.step_closure)
    caplog.clear()  # the first import of core (eager already) logged them too
    with caplog.at_level(logging.WARNING, logger="habana_frameworks.torch.utils.internal"):
        fresh = importlib.import_module(name)
    texts = [r.getMessage() for r in caplog.records if r.name.endswith("utils.internal")]
    assert texts == [
        f"Calling {f} function does not have any effect. It's lazy mode only functionality. "
        "(warning logged once)"
        for f in ("add_step_closure", "mark_step", "iter_mark_step")
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh.mark_step()
        fresh.iter_mark_step()


def test_profiler_module_capability_and_synchronize_signature(hpu: Any) -> None:
    """profiler/ProfilerApi.py: deprecated calls that warn and drive utils.profiler (the
    Synapse logger's commands, utils/profiler/csrc/bindings.cpp); hpu/__init__.py:151
    `synchronize()` takes no device; :263 + device.cpp:1800 `get_device_capability()` is the
    driver's version string."""
    hpu("lazy")
    import habana_frameworks.torch.hpu as hthpu
    import habana_frameworks.torch.profiler  # noqa: F401  the bridge's package imports
    import habana_frameworks.torch.utils.profiler as htprofiler
    from habana_frameworks.torch.profiler import ProfilerApi

    before = len(htprofiler.commands)
    with pytest.warns(UserWarning, match="setup_profiler is deprecated. Please use habana"):
        ProfilerApi.setup_profiler()
    with pytest.warns(UserWarning, match="_start_profiler"):
        ProfilerApi.start_profiler()
    with pytest.warns(UserWarning, match="_stop_profiler"):
        ProfilerApi.stop_profiler()
    assert htprofiler.commands[before:] == [
        "stop_data_capture", "no_eager_flush", "use_pid_suffix", "optimize_trace", "restart",
        "disable_mask",
    ]  # fmt: skip
    assert hthpu.get_device_capability() == "1.19.0-561ec20"
    with pytest.raises(TypeError):
        hthpu.synchronize(0)  # type: ignore[call-arg]
    hthpu.synchronize()


def _hccl_launches(batch: Any) -> list[str]:
    return [e["name"] for e in runtime_events(batch, "launch") if "hccl_" in e["name"]]


def test_functional_collectives_are_the_c10d_collectives_on_the_nic(hpu: Any) -> None:
    """ProcessGroupHCCL.cpp runs DTensor's / tensor parallel's `_c10d_functional` ops as the
    c10d ones: the same `hccl_<op>` launch, and `wait_tensor` launches nothing."""
    import torch.distributed as dist
    import torch.distributed._functional_collectives as funcol
    from hpusim.sink import get_sink

    hpu("lazy")
    dist.init_process_group("hccl", store=dist.HashStore(), rank=0, world_size=1)
    try:
        t = torch.ones(4, device="hpu")
        get_sink().drain()
        dist.all_reduce(t)
        c10d = _hccl_launches(get_sink().drain())
        out = funcol.all_reduce(t, "sum", dist.group.WORLD)
        out = funcol.wait_tensor(out) if hasattr(funcol, "wait_tensor") else out
        functional = _hccl_launches(get_sink().drain())
        assert c10d == functional == ["launch hccl_allreduce"]
        assert out.device.type == "hpu" and out.cpu().tolist() == [1.0] * 4
    finally:
        dist.destroy_process_group()


def test_lazy_mode_names_each_child_module_with_hooks_once(hpu: Any) -> None:
    """core/torch_overwrites.py:162-183, 259-282 (lazy mode only): a module assigned to another
    (or added by `add_module`) gets `custom_name` and the name hooks, once; its forward hook
    registers one gradient hook on each output that requires grad, once per tensor (lines
    84-106): a returned parameter holds one hook after three steps (the bridge's
    `test_hpu_hooks::test_fun`). The stack holds the parent's path during a child's forward
    and is empty after a forward whose pre-hook raised (`always_call=True`)."""
    hpu("lazy")
    from habana_frameworks.torch.core.torch_overwrites import _name_stack

    seen: list[list[str]] = []

    class Inner(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.par = torch.nn.Parameter(torch.tensor(1.0))

        def forward(self, x: Any) -> Any:
            seen.append(list(_name_stack))
            return x + 1, self.par

    class Outer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = Inner()

        def forward(self, x: Any) -> Any:
            return self.inner(x)[0] * 2

    model = Outer().to("hpu")
    model.add_module("extra", torch.nn.Identity())
    x = torch.tensor(1.0, device="hpu", requires_grad=True)
    for _ in range(3):
        model(x).sum().backward()
    assert model.inner.custom_name == "inner" and model.extra.custom_name == "extra"
    assert not hasattr(model, "custom_name")  # the root is assigned to nothing
    assert len(model.inner.par._backward_hooks) == 1
    assert len(model.inner._forward_pre_hooks) == len(model.inner._forward_hooks) == 1
    assert seen == [["inner"]] * 3
    assert x.grad.cpu().item() == 6.0  # 3 x d(2(x + 1))/dx: the gradient hooks change nothing

    def refuse(module: Any, args: Any) -> None:
        raise RuntimeError("pre-hook")

    model.extra.register_forward_pre_hook(refuse)
    with pytest.raises(RuntimeError, match="pre-hook"):
        model.extra(x)
    assert not _name_stack


def test_inference_mode_numbers_relu_children_per_parent(
    hpu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """core/torch_overwrites.py:59-66: with PT_HPU_INFERENCE_MODE set, the second `relu` child
    run under a parent is `parent/relu.1`; the count is dropped when the parent returns."""
    hpu("lazy")
    from habana_frameworks.torch.core.torch_overwrites import _name_stack

    paths: list[str] = []

    class Probe(torch.nn.ReLU):
        def forward(self, x: Any) -> Any:
            paths.append(_name_stack[-1])
            return super().forward(x)

    monkeypatch.setenv("PT_HPU_INFERENCE_MODE", "1")
    block = torch.nn.Sequential()
    block.add_module("relu", Probe())
    block.add_module("relu_b", Probe())
    model = torch.nn.Module()
    model.block = block
    for _ in range(2):
        model.block(torch.ones(2, device="hpu"))
    assert paths == ["block/relu", "block/relu_b.1"] * 2


def test_eager_mode_and_disable_leave_module_setattr_alone(hpu: Any) -> None:
    """The bridge wraps `Module.__setattr__` and `add_module` only in lazy mode
    (torch_overwrites.py:182, 281); disable restores torch's own."""
    setattr_of_torch = torch.nn.Module.__setattr__
    hpu("lazy")
    assert torch.nn.Module.__setattr__ is not setattr_of_torch
    hpu("eager")
    assert torch.nn.Module.__setattr__ is setattr_of_torch
    model = torch.nn.Module()
    model.child = torch.nn.Linear(2, 2)
    assert not hasattr(model.child, "custom_name")


def test_a_graph_reading_a_collectives_tensor_runs_after_the_collective(
    hpu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """habana_kernels/lazy_kernels.cpp:5934-5944: a lazy all-reduce marks its tensor as a
    collective's output and is the in-place op that produces it, so the graph that reads it runs
    after it, even when the next collective's flush launches that graph (an explicit
    `p.grad /= world` between per-gradient all-reduces, no mark_step); a graph that touches no
    collective's tensor does not wait (DDP's buckets overlap the backward). Collectives last
    5 ms here (any duration longer than the host's gap would do)."""
    import hpusim.distributed as hccl
    import torch.distributed as dist
    from hpusim.chrome_events import to_chrome_events
    from hpusim.sink import get_sink

    hpu("lazy")
    import habana_frameworks.torch.core as htcore

    monkeypatch.setattr(hccl, "collective_duration", lambda *_: 5_000_000)
    dist.init_process_group("hccl", store=dist.HashStore(), rank=0, world_size=1)
    try:
        a, b, c = (torch.ones(256, device="hpu") for _ in range(3))
        htcore.mark_step()
        get_sink().drain()
        dist.all_reduce(a)
        a.mul_(2)  # reads the all-reduced `a`
        dist.all_reduce(b)  # flushes the graph of `a.mul_`
        c.add_(1)  # touches no collective's tensor
        dist.all_reduce(c)  # flushes the graph of `c.add_`
        htcore.mark_step()
        batch = get_sink().drain()
        # microseconds from the first event: from epoch 0 a float's step there is 0.25 us, as
        # coarse as the comparison below (one run read a 0.25 us rounding as an early start)
        events = to_chrome_events(batch, pid=1, base_ns=min(batch.ts_ns))
    finally:
        dist.destroy_process_group()
    device = [e for e in events if e.get("cat") == "kernel"]
    spans = [(e["name"], e["ts"], e["ts"] + e["dur"]) for e in device]
    assert [s[0] for s in spans] == [
        "hccl_allreduce", "mul_f32", "hccl_allreduce", "add_f32", "hccl_allreduce"
    ], spans  # fmt: skip
    (_, _, a_end), (_, mul_start, _), (_, _, b_end), (_, add_start, _) = spans[:4]
    assert mul_start >= a_end - 1e-3, spans  # us: after the all-reduce it reads
    assert add_start < b_end, spans  # beside the all-reduce it does not touch
