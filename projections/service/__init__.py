"""The I/O half of the projections: the store, its sources, the runner, the API and web UI.

`store/` (SQLite or PostgreSQL, written in batches, read by queries), `sources/` (the
topics, a JSONL file, memory), `http/` (the API, web UI, bearer token, and the API's
client); beside them, what runs the parts: the runner that feeds the store batch by
batch, replicas, rebuilds, the live stream, and `app`, which wires a store, a source and
the HTTP side together. What it computes it asks of `lavalog.projections.core`; it must
not import the controller's services (watchers, actuator, the decider's Kafka loop) nor
the simulator.
"""
