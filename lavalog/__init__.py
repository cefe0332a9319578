"""lavalog: an event-sourced lifecycle controller for Volcano Jobs.

The installed package. Its subpackages are the folders at the root of the source tree
(`lavalog/<name>` is a link to `../<name>`), so the code reads as the layers it is made
of while an installed lavalog claims only its own name in site-packages:

- `lavalog.events`: the event schema, the public contract of the topics;
- `lavalog.apimachinery`: what the API server knows of an object (schemas, CRDs);
- `lavalog.controller`: watchers, decider, actuator and their wiring;
- `lavalog.projections`: timelines, audit, the HTTP API and web UI;
- `lavalog.simulator`: the simulated cluster for development, demos and tests;
- `lavalog.cli`: the `lavalog` command line, above every other layer.
"""
