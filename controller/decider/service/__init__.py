"""The decider's service: a consumer-group member running the pure core over Kafka.

Owns the Kafka loop (restore, replay, decide, produce, commit) and nothing else: every
rule it follows is in `lavalog.controller.decider.core`. May import aiokafka, asyncio and
`lavalog.controller.kafka`; must not import the other components.
"""
