"""The simulated cluster: a Kubernetes API server, gang scheduler and kubelets in one process.

For tests (whose fixtures are `tests/cluster.py`), the demo and benchmarks. The product
never imports it, and it imports nothing of the product but what the product shares with
it (`lavalog.events`, `lavalog.apimachinery`): it is a cluster, not a client of lavalog.
"""
