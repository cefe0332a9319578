"""The simulated cluster: a Kubernetes API server, gang scheduler and kubelets in one process.

For tests, the demo and benchmarks; also the scripted observation logs (`scenarios`) and
the pytest fixtures (`testing`) they share. The product never imports it; it must not
import the command line.
"""
