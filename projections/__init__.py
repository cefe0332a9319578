"""The projections: job timelines, summaries and the audit, read off the controller's topics.

They own everything built from `lavalog.observed` and `lavalog.decisions` after the fact:
the folded history of each job incarnation, its timeline and list row, the audit and the
what-if, the store they are kept in and the API and web UI that serve them.

`core/` is the pure half (folds, records, views, renderers, decoding, the events a source
hands the store); `service/` runs it (sources, store, runner, HTTP). The projections read
the controller's topics and may run the controller's pure decider (`lavalog.controller.decider`,
for the audit and the what-if); they never import the controller's services (watchers,
actuator, the decider's Kafka loop) nor the simulator, and nothing in the controller
imports them.
"""
