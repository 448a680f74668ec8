"""Rank by rank: every rank of a run analysed apart, in this process or as Dask tasks.

Execution only -- what runs where:

- `tasks.analyze_rank_file`: one rank file -> its per-rank partial results (what a worker runs;
  importable, so Dask can send it to workers);
- `runner.analyze_files`: many rank files -> one `Report` (in this process with `workers=1`,
  on a Dask `LocalCluster` bound to 127.0.0.1 with more, or on an existing cluster by address);
  failed ranks are named, the others reported;
- `cluster`, `owned_workers`: the Dask cluster and the workers this process starts.

The merge of per-rank sections lives with the analyses (`hpuprof.analysis.stack`), the command
body with the CLI (`hpuprof.cli.commands.analyze_ranks`), multi-card recording with capture
(`hpuprof.capture.cards`). Nothing here imports Dask until a cluster is asked for.
"""
