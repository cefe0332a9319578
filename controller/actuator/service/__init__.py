"""The actuator's service: consumes `lavalog.decisions` and makes the API calls.

Owns the I/O: lanes and their turns, rate limit, retries, the API client, the progress
log and the offsets it commits. Every object it writes is built by
`lavalog.controller.actuator.core`; it must not build manifests itself.
"""
