"""Who may call lavalog's HTTP servers: the authentication both servers share.

The controller's `/healthz`, `/readyz`, `/metrics` (controller/health.py) and the
projections' API, UI and `/metrics` (projections/service/app.py) run one aiohttp
middleware (`middleware.py`) and, in a cluster, one Kubernetes authenticator
(`kubernetes.py`: TokenReview, then SubjectAccessReviews). It lives here, below both
servers, because the projections may import the controller's shared modules and the
controller never imports the projections; it imports none of the controller's
components, so the projections importing it import no service (pyproject.toml's contracts).
"""
