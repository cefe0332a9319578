"""Volcano's vocabulary, in one place: its API types and the names it writes.

`api` (the Job API as msgspec Structs, phases, policy events and actions), `labels`
(label and annotation keys on a job's pods), `reasons` (Kubernetes Event reasons of the
job controller). Pure, like all of `events`: must not import anything else of lavalog.
"""
