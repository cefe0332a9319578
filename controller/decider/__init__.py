"""The decider: Volcano's job lifecycle over the observed log.

Owns `core/` (the pure state machine: `step`/`decide`/`evolve`, one module per phase, and
the per-partition bookkeeping, snapshots and due timers) and `service/` (runs the core
over `lavalog.observed` and produces `lavalog.decisions`). Must not import the watchers,
the actuator, the projections or the command line.
"""
