"""The watchers: Kubernetes changes turned into facts on `lavalog.observed`.

Owns `core/` (pure: the partial Kubernetes objects it decodes, their translation into
observations, the pod inventory behind `PodsListed`, the changes a relist reveals) and
`service/` (list+watch, the leader Lease, the publisher). Must not import the actuator,
the projections or the command line.
"""
