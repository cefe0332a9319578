"""Who may read the projections: what they add to the middleware both servers share.

Three ways to run, one middleware (lavalog.controller.auth):

- no authentication: every caller reads everything; the server then listens on this
  machine only (`app.check_exposure`);
- a shared token (`--token-file`, for development): one bearer token, from a file that
  is read again when it changes (a rotated Secret needs no restart); whoever holds it
  reads everything; probes and `/metrics` stay open;
- Kubernetes (`--kubernetes-auth`, the manifests): each caller's own bearer token, reviewed
  by the API server; they read the jobs of the namespaces where RBAC lets them `get`
  `jobs.batch.volcano.sh` (controller/auth/kubernetes.py).

A browser, which cannot set a header on a page load or an EventSource, sends its token as
the `lavalog_token` cookie that the UI's sign-in page sets (`SIGN_IN`).
"""

from __future__ import annotations

import hmac
import os
from pathlib import Path

from lavalog.controller.auth.kubernetes import JOBS, ResourceRule
from lavalog.controller.auth.middleware import EVERYONE, Access, SignIn, Viewer

#: the UI's way in: the sign-in page, what it loads, and the cookie it keeps the token in
SIGN_IN = SignIn(
    cookie="lavalog_token",
    page=Path(__file__).parent / "ui" / "sign-in.html",
    files=frozenset({"/ui/sign-in.js", "/ui/sign-in.css"}),
    api="/api/",
)


class TokenFile:
    """The token in a file, re-read when the file changes (a rotated Secret)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._token = b""
        self.current()  # a missing or empty file is an error at start, not at first request

    def current(self) -> bytes:
        try:
            stat = os.stat(self.path)
        except OSError as exc:
            raise ValueError(f"token file {self.path}: {exc.strerror}") from None
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp != self._stamp:
            token = self.path.read_bytes().strip()
            if not token:
                raise ValueError(f"token file {self.path} is empty")
            self._token, self._stamp = token, stamp
        return self._token


class SharedToken:
    """One token for everybody (development): its holder reads everything."""

    open = frozenset({Access.PROBE, Access.METRICS})

    def __init__(self, token: TokenFile) -> None:
        self._token = token

    async def authenticate(self, token: bytes) -> Viewer | None:
        # compare_digest: the time taken does not tell how much of a guess was right
        return EVERYONE if hmac.compare_digest(token, self._token.current()) else None


def forbidden(viewer: Viewer, rule: ResourceRule, namespace: str) -> str:
    """Why a 403, in the words of a Kubernetes API server refusing the same request
    (`responsewriters.forbiddenMessage`)."""
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    return (
        f'{rule.resource}.{rule.group} is forbidden: User "{viewer.name}" cannot'
        f' {rule.verb} resource "{rule.resource}" in API group "{rule.group}" {where}'
    )


def forbidden_namespace(viewer: Viewer, namespace: str) -> str:
    """Why a 403 for reading a namespace's jobs."""
    return forbidden(viewer, JOBS, namespace)
