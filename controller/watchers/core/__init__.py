"""The watchers' pure half: what a Kubernetes change means for the log.

The partial objects decoded from the API (`objects`), their translation into observations
(`translate`), the pods listed per job (`inventory`), the changes a list or watch line
brings (`changes`). Must not import asyncio, aiohttp, aiokafka, kubernetes_asyncio or
`lavalog.controller.watchers.service`.
"""
