"""hpudash: the Dash web app over a directory of hpuprof runs and traces.

Importing this package is cheap: it imports nothing, loads no data and starts nothing (so no
module of the package ever imports it back into a cycle). `hpudash.app.create_app(run_dir)`
builds the app; `hpuprof dashboard DIR` serves it.
"""
