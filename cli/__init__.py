"""The `lavalog` command line: the entry point (`cli.py`), one module per command
(`commands/`) and the options and output the commands share.

It sits above every layer: it may import every other package (events, controller,
projections, simulator), and nothing imports it (import-linter's contract "nothing
imports the command line").
"""
