"""The pure half of the projections: deterministic functions of the log's events.

Owns the fold of events into a job's history (`history`, `fold`), the views drawn from
it (`summary`, `timeline`), their text rendering (`render`), the audit and the what-if
(which run the controller's pure decider), and how events and times are decoded for the
projections (`decoding`, `wire`, and `feed`: the events a source hands the store, with
their bytes and positions). It must not import `lavalog.projections.service` nor any I/O
library (asyncio, aiokafka, aiohttp, kubernetes_asyncio, sqlite3, psycopg): everything
here is a function of its arguments, so a rebuild and an incremental run agree.
"""
