"""The actuator's pure half: decisions turned into the Kubernetes objects Volcano would create.

`pods.build_pod`/`build_pods` (PodsCreate), `podgroup.build_podgroup` (PodGroupCreate)
and `resources.build_plugin_resources` (PluginResourcesEnsure) return manifests as JSON
dicts and do no I/O: the same decision and Job always give the same objects, so a replay
or a retry after a crash writes exactly what the first attempt wrote. The half that talks
to the API server (create-if-absent, retries, rate limits) calls these.

Also pure, and run by the service: which decisions are stale (`staleness`), the order
within a job's lane (`lane_order`), the offsets carried out (`offsets`). Must not import
asyncio, aiohttp, aiokafka, kubernetes_asyncio or `lavalog.controller.actuator.service`.
"""
