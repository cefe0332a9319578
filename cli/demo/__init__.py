"""The demo behind `lavalog demo`: the whole system in one process (`run`), the stories it
tells (`stories`, manifests in `jobs/`) and its live table (`display`).

It stands beside the command line, above the product and the simulated cluster it wires
together, so that the simulator stays a cluster that depends on nothing of the product.
"""
