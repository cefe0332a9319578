"""The projections over HTTP: the API (`api`, its OpenAPI document `openapi`, `/metrics`),
the optional bearer token (`auth`), the web UI (`web`, files in `ui/`) and the API's
client for the read commands (`client`)."""
