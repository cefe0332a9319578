"""One module per `lavalog` command, each with `configure(parser)` and `run(args)`; the
table of commands and their help is in `lavalog.cli.main`. A command imports what it needs
directly; no other package imports a command, and a command must not import another.
"""
