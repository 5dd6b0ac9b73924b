"""The `harness` command line: one module per family of subcommands (main dispatches)."""
