"""The actuator: decisions carried out against the Kubernetes API.

Owns `core/` (pure: the objects Volcano would write for a decision, which decisions are
stale, lane order, offsets done) and `service/` (the consumer over `lavalog.decisions`,
lanes, rate limit, retries, the API client). Must not import the watchers, the decider
(it reads decisions off the log), the projections or the command line.
"""
