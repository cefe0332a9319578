"""The simulated cluster: a Kubernetes API server, gang scheduler and kubelets in one process.

For tests, the demo and benchmarks; also the pytest fixtures (`testing`) they share. The
product never imports it, and it imports nothing of the product but its vocabulary
(`lavalog.events`): it is a cluster, not a client of lavalog.
"""
