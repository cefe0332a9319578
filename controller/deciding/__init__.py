"""The decider as a service: the pure state machine run over `lavalog.observed` partitions.

Pure parts (`snapshots`, `partition`, `timers`) are separate from the Kafka loop
(`service`), so restore, replay and timer rules are tested without a broker.
"""
