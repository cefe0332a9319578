"""One module per projections subcommand of `lavalog`."""
