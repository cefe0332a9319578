"""API errors, carried as exceptions inside the simulator and answered as `Status` objects.

Kubernetes clients branch on `code` and `reason` (409 AlreadyExists vs Conflict, 410
Expired, 404 NotFound), so every failure the simulator can produce is one of these.
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """A failed API request; `status()` is the body the real API server would send."""

    def __init__(
        self, code: int, reason: str, message: str, *, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def not_found(plural: str, name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'{plural} "{name}" not found', details={"name": name, "kind": plural}
    )


def already_exists(plural: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{plural} "{name}" already exists',
        details={"name": name, "kind": plural},
    )


def conflict(plural: str, name: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {plural} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        details={"name": name, "kind": plural},
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def invalid(kind: str, name: str, message: str) -> ApiError:
    return ApiError(
        422,
        "Invalid",
        f'{kind} "{name}" is invalid: {message}',
        details={"name": name, "kind": kind},
    )


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def internal(message: str) -> ApiError:
    """`apierrors.NewInternalError`: what kube-apiserver makes of a storage failure."""
    return ApiError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        details={"causes": [{"message": message}]},
    )
