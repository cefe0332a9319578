"""The controller's Kubernetes client: raw JSON over kubernetes-asyncio's transport.

kubernetes-asyncio supplies configuration (kubeconfig or in-cluster), authentication and
TLS; requests and responses stay bytes so that hot paths decode them with msgspec into
the few fields they need, instead of building generated model objects.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
import msgspec
from aiohttp.helpers import get_env_proxy_for_url
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config.config_exception import ConfigException
from yaml import YAMLError
from yarl import URL

from lavalog.controller.version import version

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
#: the User-Agent names the client (`lavalog-controller/0.1.0`), as kubectl's does, so an
#: API server's audit log tells the controller's requests from a person's `lavalog job`
CONTROLLER = "lavalog-controller"
CLI = "lavalog"


class KubeError(Exception):
    """An error answer from the API server, with its HTTP status and Status reason, and
    how long it asked the client to wait before trying again (a 429's or 503's
    `Retry-After`, as API Priority and Fairness sends it; 0 when it did not say)."""

    def __init__(self, status: int, reason: str, message: str, *, retry_after: float = 0.0) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after

    @property
    def temporary(self) -> bool:
        """Worth retrying as it is: throttled, a server-side failure, or a timeout."""
        return self.status in (429, 500, 502, 503, 504)


def retry_after(error: BaseException) -> float:
    """Seconds the API server asked to wait before the request is sent again (0: none)."""
    return error.retry_after if isinstance(error, KubeError) else 0.0


def is_transient(error: BaseException) -> bool:
    """A failure that says nothing about the request (throttled, a server error, a dropped
    connection, a timeout): the same request is worth sending again."""
    if isinstance(error, KubeError):
        return error.temporary
    return isinstance(error, aiohttp.ClientError | TimeoutError | ConnectionError)


class _Details(msgspec.Struct, rename="camel"):
    retry_after_seconds: int = 0


class _Status(msgspec.Struct):
    reason: str = ""
    message: str = ""
    details: _Details = msgspec.field(default_factory=_Details)


class Kube:
    """Raw API calls: `await kube.request("GET", "/api/v1/namespaces/ns/pods/p")` -> bytes."""

    def __init__(self, api: ApiClient) -> None:
        self.api = api

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, str | int | bool] | None = None,
        body: Any = None,
        content_type: str = JSON,
        request_timeout: float = 30.0,
    ) -> bytes:
        """The response body; KubeError for an answer of 400 or more."""
        response = await self._send(method, path, query, body, content_type, request_timeout)
        try:
            data: bytes = await response.read()
        finally:
            response.release()
        if response.status >= 400:
            raise _error(response.status, data, response.headers.get("Retry-After"))
        return data

    @asynccontextmanager
    async def stream(
        self, path: str, query: Mapping[str, str | int | bool], *, request_timeout: float
    ) -> AsyncIterator[AsyncIterator[bytes]]:
        """The lines of a streaming answer (a watch), one JSON document each."""
        response = await self._send("GET", path, query, None, JSON, request_timeout)
        try:
            if response.status >= 400:
                raise _error(
                    response.status, await response.read(), response.headers.get("Retry-After")
                )
            yield _lines(response.content)
        finally:
            response.release()

    async def _send(
        self,
        method: str,
        path: str,
        query: Mapping[str, str | int | bool] | None,
        body: Any,
        content_type: str,
        request_timeout: float,
    ) -> aiohttp.ClientResponse:
        """The request as kubernetes-asyncio's `ApiClient.call_api` and its REST client
        send it (authentication, proxy, TLS server name, connection pool), straight to
        their aiohttp session: a body is encoded once, by msgspec, where the REST client
        ran `json.dumps` over it (a fifth of the request path's CPU, a pod's 11 µs) after
        `call_api` had walked it again for generated model objects lavalog never sends."""
        api = self.api
        rest = api.rest_client
        params = [(key, _query_value(value)) for key, value in (query or {}).items()]
        headers = {**api.default_headers, "Accept": JSON, "Content-Type": content_type}
        # a coroutine in newer kubernetes-asyncio, a plain call in 31
        authenticated = api.update_params_for_auth(headers, params, ["BearerToken"])
        if inspect.isawaitable(authenticated):
            await authenticated
        url = f"{api.configuration.host}{path}"
        if params:
            url = f"{url}?{urlencode(params)}"
        session: aiohttp.ClientSession = rest.pool_manager
        return await session.request(
            method,
            url,
            headers=headers,
            data=None if body is None else _ENCODER.encode(body),
            timeout=aiohttp.ClientTimeout(total=request_timeout),
            proxy=rest.proxy,
            proxy_headers=rest.proxy_headers,
            server_hostname=rest.server_hostname,
        )


_ENCODER = msgspec.json.Encoder()


async def _lines(content: Any) -> AsyncIterator[bytes]:
    async for line in content:
        stripped = line.strip()
        if stripped:
            yield stripped


def _query_value(value: str | int | bool) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _error(status: int, data: bytes, retry_after_header: str | None = None) -> KubeError:
    try:
        parsed = msgspec.json.decode(data, type=_Status)
    except msgspec.DecodeError:
        parsed = _Status(message=data[:200].decode(errors="replace"))
    wait = float(parsed.details.retry_after_seconds)
    if retry_after_header and retry_after_header.strip().isdigit():  # seconds, as Kubernetes says
        wait = max(wait, float(retry_after_header))
    return KubeError(status, parsed.reason, parsed.message, retry_after=wait)


#: environment variables naming a kubeconfig, looked at in this order after `--kubeconfig`
KUBECONFIG_VARIABLES = ("LAVALOG_KUBECONFIG", "KUBECONFIG")
#: kubectl's default, used when neither the flag nor a variable names a file
DEFAULT_KUBECONFIG = "~/.kube/config"
KUBECONFIG_HELP = (
    "kubeconfig file (default: $LAVALOG_KUBECONFIG, else $KUBECONFIG, else ~/.kube/config "
    "if it exists, else the in-cluster service account)"
)
_WHAT_TO_DO = (
    "pass --kubeconfig FILE or set $KUBECONFIG to the kubeconfig of your cluster "
    "(inside a cluster, the pod's service account is used)"
)


class KubeConfigError(Exception):
    """No usable cluster configuration; the message says what was tried and what to do."""


@dataclass(frozen=True)
class KubeconfigChoice:
    """Where the cluster configuration comes from: a file and who named it, or in-cluster."""

    #: None: the in-cluster service account
    path: str | None
    #: "--kubeconfig", "$KUBECONFIG", ...: shown in errors
    origin: str


def choose_kubeconfig(
    flag: str | None, environ: Mapping[str, str] = os.environ, home: Path | None = None
) -> KubeconfigChoice:
    """The flag, else the first variable set, else ~/.kube/config if present, else in-cluster."""
    if flag:
        return KubeconfigChoice(flag, "--kubeconfig")
    for variable in KUBECONFIG_VARIABLES:
        if environ.get(variable):
            return KubeconfigChoice(environ[variable], f"${variable}")
    default = (home or Path.home()) / ".kube" / "config"
    if default.is_file():
        return KubeconfigChoice(str(default), DEFAULT_KUBECONFIG)
    return KubeconfigChoice(None, "in-cluster")


@asynccontextmanager
async def connect(
    kubeconfig: str | None, *, origin: str = "--kubeconfig", client: str = CLI
) -> AsyncIterator[Kube]:
    """A client from a kubeconfig file, or from the in-cluster service account (None),
    that introduces itself as `client` (CONTROLLER or CLI).

    KubeConfigError, in one sentence, when neither works; `origin` names who chose the file.
    """
    configuration = Configuration()
    await _load_configuration(configuration, kubeconfig, origin)
    _proxy_from_environment(configuration)
    async with _client(configuration, f"{client}/{version()}") as kube:
        yield kube


@asynccontextmanager
async def connected_like(kube: Kube) -> AsyncIterator[Kube]:
    """A client of `kube`'s API server with `kube`'s own configuration and credentials
    (one `Configuration`, so a refreshed token reaches both) and connections of its own,
    for the event loop this is entered on: an aiohttp session serves only the loop it was
    made on, so a thread with its own loop (the leader Lease's renewals) needs its own."""
    async with _client(kube.api.configuration, kube.api.user_agent) as twin:
        yield twin


@asynccontextmanager
async def speaking_as(kube: Kube, token: str) -> AsyncIterator[Kube]:
    """A client of `kube`'s API server that speaks as the holder of `token`: the same
    address, TLS trust and proxy, none of `kube`'s own credentials (its token, its client
    certificate, which the API server would authenticate first), so the API server
    authenticates and authorizes the token's user and its audit log names them. The
    projections act for a caller so (kube-dashboard and Argo Workflows' `client` mode do
    the same with their users' tokens)."""
    own = kube.api.configuration
    configuration = Configuration(
        host=own.host,
        api_key={"BearerToken": token},
        api_key_prefix={"BearerToken": "Bearer"},
    )
    configuration.verify_ssl = own.verify_ssl
    configuration.ssl_ca_cert = own.ssl_ca_cert
    configuration.assert_hostname = own.assert_hostname
    configuration.tls_server_name = own.tls_server_name
    configuration.proxy = own.proxy
    configuration.proxy_headers = own.proxy_headers
    async with _client(configuration, kube.api.user_agent) as caller:
        yield caller


@asynccontextmanager
async def _client(configuration: Configuration, user_agent: str | None) -> AsyncIterator[Kube]:
    async with ApiClient(configuration) as api:
        _no_lookups_per_request(api)
        api.user_agent = user_agent
        yield Kube(api)


async def _load_configuration(configuration: Configuration, path: str | None, origin: str) -> None:
    if path is None:
        try:
            kube_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except ConfigException as exc:
            tried = ", ".join(("--kubeconfig", *(f"${v}" for v in KUBECONFIG_VARIABLES)))
            raise KubeConfigError(
                f"no cluster configuration: {tried} not given, no {DEFAULT_KUBECONFIG}, and not "
                f"running inside a cluster ({str(exc).rstrip('.')}); {_WHAT_TO_DO}"
            ) from None
        return
    if not _any_file_exists(path):
        raise KubeConfigError(f"kubeconfig {path} (from {origin}) does not exist; {_WHAT_TO_DO}")
    try:
        await kube_config.load_kube_config(config_file=path, client_configuration=configuration)
    except (ConfigException, YAMLError, OSError, ValueError) as exc:
        reason = " ".join(str(exc).split())
        raise KubeConfigError(
            f"kubeconfig {path} (from {origin}) cannot be used: {reason}; {_WHAT_TO_DO}"
        ) from None


def _any_file_exists(kubeconfig: str) -> bool:
    """Whether one of the files of a kubeconfig path (`a:b`, as $KUBECONFIG may be) exists."""
    return any(Path(part).expanduser().is_file() for part in kubeconfig.split(os.pathsep) if part)


def _proxy_from_environment(configuration: Configuration) -> None:
    """Honour HTTPS_PROXY/NO_PROXY as client-go does, looked up once instead of per request."""
    if configuration.proxy:
        return
    try:
        proxy, auth = get_env_proxy_for_url(URL(str(configuration.host)))
    except LookupError:
        return
    configuration.proxy = str(proxy)
    if auth is not None:
        configuration.proxy_headers = {"Proxy-Authorization": auth.encode()}


def _no_lookups_per_request(api: ApiClient) -> None:
    """Replace kubernetes-asyncio's `trust_env=True` session, which reads the proxy
    variables and ~/.netrc in a worker thread on every request (a third of the
    actuator's CPU under load), with one that does not: same connector, same buffer."""
    rest = api.rest_client
    session: aiohttp.ClientSession = rest.pool_manager
    connector = session.connector
    session.detach()
    rest.pool_manager = aiohttp.ClientSession(connector=connector, read_bufsize=2**21)
