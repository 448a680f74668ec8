"""Rank by rank: every rank of a run analysed apart, in this process or as Dask tasks.

- `tasks.analyze_rank_file`: one rank file -> its per-rank partial results (what a worker runs;
  importable, so Dask can send it to workers);
- `runner.analyze_files`: many rank files -> one `Report` (in this process with `workers=1`,
  on a Dask `LocalCluster` bound to 127.0.0.1 with more, or on an existing cluster by address);
  failed ranks are named, the others reported;
- `stack.stack_ranks`: the default merge of per-rank report sections;

Nothing here imports Dask until a cluster is asked for.
"""
