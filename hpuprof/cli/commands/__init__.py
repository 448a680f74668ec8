"""One module per `hpuprof` subcommand, each with `register(app)`."""
