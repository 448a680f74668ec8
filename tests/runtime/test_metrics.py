"""Habana metrics: names, stats keys, local contexts, dumps in both formats, env-driven files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")


def _compile_shapes(sim: Any, shapes: list[int]) -> None:
    for n in shapes:
        (torch.ones(n, device="hpu") * 2).sum()
        sim.mark_step()


def test_initial_values_and_keys(hpu: Any) -> None:
    hpu("lazy", PT_HPU_ENABLE_CACHE_METRICS="1")
    import habana_frameworks.torch.hpu as ht
    from habana_frameworks.torch.hpu import metrics

    assert ht.metric_global is metrics.metric_global
    assert metrics.metric_global("graph_compilation").stats() == [
        ("TotalNumber", 0),
        ("TotalTime", 0),
        ("AvgTime", 0),
    ]
    assert dict(metrics.metric_global("cpu_fallback").stats()) == {
        "TotalNumber": 0,
        "FallbackOps": {},
    }
    assert dict(metrics.metric_global("memory_defragmentation").stats()) == {
        "TotalNumber": 0,
        "TotalSuccessful": 0,
        "AvgTime": 0,
        "MaxTime": 0,
    }
    assert dict(metrics.metric_global("recipe_cache").stats()) == {
        "TotalHit": 0,
        "RecipeHit": {},
        "TotalMiss": 0,
        "RecipeMiss": {},
    }
    assert metrics.metric_global("no_such_metric") is None


def test_recipe_cache_metric_is_opt_in(hpu: Any) -> None:
    hpu("lazy")
    from hpusim.metrics import MetricNotFound, metric_global, metric_localcontext

    assert metric_global("recipe_cache") is None
    with (
        pytest.raises(
            MetricNotFound, match=r"Metric with given name \(recipe_cache\) doesn't exist\."
        ),
        metric_localcontext("recipe_cache"),
    ):
        pass


def test_ten_shapes_ten_compiles_and_nested_contexts(hpu: Any) -> None:
    sim = hpu("lazy", PT_HPU_ENABLE_CACHE_METRICS="1", PT_HPU_METRICS_GC_DETAILS="1")
    from hpusim.metrics import metric_global, metric_localcontext

    with metric_localcontext("graph_compilation") as outer:
        _compile_shapes(sim, [1, 2, 3])
        with metric_localcontext("graph_compilation") as inner:
            _compile_shapes(sim, [4, 5, 6, 7, 8, 9, 10])
    assert dict(inner.stats())["TotalNumber"] == 7
    assert dict(outer.stats())["TotalNumber"] == 10
    gc = dict(metric_global("graph_compilation").stats())
    assert gc["TotalNumber"] == 10 and isinstance(gc["TotalTime"], int)
    assert len(gc["recipe"]) == 10 and gc["recipe"][0][0] == ".graph_dumps/HabanaFusedOpLazy_0"
    assert dict(metric_global("recipe_cache").stats())["TotalMiss"] == 10
    _compile_shapes(sim, [11])
    assert dict(outer.stats())["TotalNumber"] == 10  # stopped at exit, still readable


def test_reset_keeps_the_recipe_details(hpu: Any) -> None:
    sim = hpu("lazy", PT_HPU_METRICS_GC_DETAILS="1")
    from hpusim.metrics import metric_global

    _compile_shapes(sim, [1])
    gc = metric_global("graph_compilation")
    gc.reset()
    stats = dict(gc.stats())
    assert stats["TotalNumber"] == 0 and len(stats["recipe"]) == 1  # the bridge's quirk


def test_recipe_details_follow_the_flag_when_stats_are_read(
    hpu: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bridge's `GraphCompilationMetric.stats()` reads PT_HPU_METRICS_GC_DETAILS at each
    call (metrics.py:376), so its own test sets it inside the test, after the metric exists
    (`test_graph_compilation_check_gc_details`); the emulator read it once, at enable."""
    sim = hpu("lazy")
    from hpusim.metrics import metric_global

    _compile_shapes(sim, [1, 2])
    gc = metric_global("graph_compilation")
    assert "recipe" not in dict(gc.stats())
    monkeypatch.setenv("PT_HPU_METRICS_GC_DETAILS", "true")
    assert len(dict(gc.stats())["recipe"]) == 2
    monkeypatch.setenv("PT_HPU_METRICS_GC_DETAILS", "0")
    assert "recipe" not in dict(gc.stats())


def test_metrics_dump_json_and_text(hpu: Any, tmp_path: Path) -> None:
    sim = hpu("lazy")
    from habana_frameworks.torch.hpu.metrics import metrics_dump

    _compile_shapes(sim, [1, 2])
    torch.digamma(torch.rand(2, device="hpu"))
    metrics_dump(str(tmp_path / "m.json"), "json")
    raw = (tmp_path / "m.json").read_text()
    assert raw.startswith("[") and raw.endswith("]\n") and "},\n{" in raw
    records = json.loads(raw)
    assert [r["metric_name"] for r in records] == [
        "graph_compilation",
        "cpu_fallback",
        "memory_defragmentation",
    ]
    assert all(
        set(r) == {"metric_name", "triggered_by", "generated_on", "statistics"} for r in records
    )
    assert records[0]["triggered_by"] == "user"
    assert records[0]["statistics"]["TotalNumber"] >= 2
    assert records[1]["statistics"]["FallbackOps"] == {"aten::digamma": 1}
    metrics_dump(str(tmp_path / "m.txt"), "text")
    text = (tmp_path / "m.txt").read_text()
    assert text.startswith("Metric name: graph_compilation\nTriggered by: user\n")
    assert "\nStatistics:\n\tTotalNumber: " in text and "\n\tAvgTime: " in text
    assert "Metric name: cpu_fallback" in text and text.endswith("\n\n")
    metrics_dump(str(tmp_path / "m.json"), "json")  # an existing name gets a .1 suffix
    assert (tmp_path / "m.json.1").is_file()


def test_env_file_with_metric_change_and_rank(hpu: Any, tmp_path: Path) -> None:
    import hpusim

    base = tmp_path / "out" / "metricslog.json"
    sim = hpu(
        "lazy",
        PT_HPU_METRICS_FILE=str(base),
        PT_HPU_METRICS_DUMP_TRIGGERS="process_exit,metric_change",
        PT_HPU_ENABLE_CACHE_METRICS="1",
        RANK="0",
    )
    _compile_shapes(sim, [1, 2, 3])
    hpusim.disable()  # the process_exit dump (also registered with atexit)
    path = tmp_path / "out" / "metricslog-rank0.json"
    records = json.loads(path.read_text())
    assert len(records) == 10  # 3 graph_compilation + 3 recipe_cache changes, then 4 at exit
    changes = [r for r in records if r["triggered_by"] == "metric_change"]
    assert [
        r["statistics"]["TotalNumber"] for r in changes if r["metric_name"] == "graph_compilation"
    ] == [1, 2, 3]
    exits = [r for r in records if r["triggered_by"] == "process_exit"]
    assert [r["metric_name"] for r in exits] == [
        "graph_compilation",
        "cpu_fallback",
        "memory_defragmentation",
        "recipe_cache",
    ]


def test_env_file_named_by_the_rank_set_after_import(
    hpu: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`initialize_distributed_hpu` sets RANK after the bridge is imported; the env file still
    gets `-rank<N>` (the bridge's saver names its file at the first write), as the bridge's
    `test_metric_run_processes_via_torch_mp` expects of children started by torch.multiprocessing."""
    import hpusim

    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "ID"):  # initialize_distributed_hpu sets
        monkeypatch.setenv(name, "")  # them: setenv first so that monkeypatch restores each
        monkeypatch.delenv(name)  # one (a bare delenv of an unset name records nothing)
    base = tmp_path / "metric.json"
    sim = hpu("lazy", PT_HPU_METRICS_FILE=str(base))
    import habana_frameworks.torch.distributed.hccl as hccl

    hccl.initialize_distributed_hpu(world_size=2, rank=1, local_rank=1)
    _compile_shapes(sim, [1])
    hpusim.disable()
    assert not base.exists()
    records = json.loads((tmp_path / "metric-rank1.json").read_text())
    assert records[0]["triggered_by"] == "process_exit"
    assert records[0]["statistics"]["TotalNumber"] == 1


def test_env_file_mark_step_trigger_and_text_format(hpu: Any, tmp_path: Path) -> None:
    base = tmp_path / "m"
    sim = hpu(
        "lazy",
        PT_HPU_METRICS_FILE=str(base),
        PT_HPU_METRICS_FILE_FORMAT="text",
        PT_HPU_METRICS_DUMP_TRIGGERS="mark_step",
    )
    _compile_shapes(sim, [1, 2])
    text = base.read_text()
    assert text.count("Metric name: graph_compilation") == 2
    assert "Triggered by: mark_step\n" in text


def test_no_file_when_the_device_was_never_acquired(hpu: Any, tmp_path: Path) -> None:
    import hpusim

    hpu("lazy", PT_HPU_METRICS_FILE=str(tmp_path / "never.json"))
    hpusim.disable()
    assert not (tmp_path / "never.json").exists()


def test_ranked_path_naming() -> None:
    from hpusim.metrics import ranked_path

    env = {"RANK": "3"}
    assert ranked_path("metric_file.json", env) == "metric_file-rank3.json"
    assert ranked_path("metric_file", env) == "metric_file-rank3"
    assert ranked_path("metric_file.txt.json", env) == "metric_file.txt-rank3.json"
    assert ranked_path("/a/b.json", {"OMPI_COMM_WORLD_RANK": "1"}) == "/a/b-rank1.json"
    assert ranked_path("b.json", {}) == "b.json"


def test_snapshot_is_the_json_dump_shape(hpu: Any) -> None:
    sim = hpu("lazy")
    _compile_shapes(sim, [1])
    snap = sim.metrics_snapshot()
    assert snap["by_name"]["graph_compilation"]["TotalNumber"] == 1
    assert snap["records"][0]["metric_name"] == "graph_compilation"
    json.dumps(snap)
