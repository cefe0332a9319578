"""The watchers' service: list+watch over HTTP, the leader Lease, publishing to Kafka.

Owns the I/O; what a change means is `lavalog.controller.watchers.core`'s. Must not import the
decider's or the actuator's service: the components meet on the log.
"""
