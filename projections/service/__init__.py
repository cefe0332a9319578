"""The I/O half of the projections: the store, its sources, the runner, the API and web UI.

Owns reading the topics (Kafka, a JSONL file, memory), the store (SQLite or PostgreSQL)
and its replicas, the runner that feeds the store batch by batch, the live stream, and the
HTTP API, web UI and remote client. What it computes it asks of `lavalog.projections.core`; it
must not import the controller's services (watchers, actuator, the decider's Kafka loop)
nor the simulator.
"""
