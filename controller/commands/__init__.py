"""One module per `lavalog` subcommand."""
