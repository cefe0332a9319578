"""The controller: the three components that run Volcano's lifecycle, and what they share.

Owns `watchers/`, `decider/` and `actuator/` (each a pure `core/` and an I/O `service/`,
meeting only on the Kafka topics), and what they share: `kafka/` (settings, clients,
topics), `kube.py` (the API client), `commands.py` (Volcano Commands, made as vcctl makes
them: `lavalog job` and the projections' job page create them), `admission/` (Volcano's
defaults and validation, pure), `auth/` (who may call lavalog's HTTP servers, the
projections' too), `logs.py`, `app.py` (the three in one process, health and metrics).
Must not import the projections (they read its topics), the simulator or the command line.
"""
