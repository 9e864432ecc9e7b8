"""API errors as the Kubernetes API server reports them (apimachinery `pkg/api/errors`).

Guarantees
----------
* An `ApiError` carries exactly what a `metav1.Status` failure carries: HTTP `code`, machine
  `reason`, human `message` and optional `details`; `status()` is the body kubectl and the
  official clients parse (`kind: Status`, `apiVersion: v1`, `status: Failure`).
* The helper constructors build upstream's messages byte for byte
  (`pods "web-abcde" not found`, `replicasets.apps "web" not found`, `Operation cannot be
  fulfilled on ...`), so what a user reads matches a real cluster.
* Resources are named the way upstream's `schema.GroupResource.String()` prints them:
  `pods`, `replicasets.apps`. Helpers accept that string and split it into details
  (`{"group": "apps", "kind": "replicasets"}`) as `StatusDetails` does.
"""

from __future__ import annotations

from typing import Any

# metav1.StatusReason values used here.
REASON_NOT_FOUND = "NotFound"
REASON_ALREADY_EXISTS = "AlreadyExists"
REASON_CONFLICT = "Conflict"
REASON_INVALID = "Invalid"
REASON_GONE = "Gone"
REASON_EXPIRED = "Expired"
REASON_BAD_REQUEST = "BadRequest"
REASON_FORBIDDEN = "Forbidden"
REASON_TOO_MANY_REQUESTS = "TooManyRequests"
REASON_METHOD_NOT_ALLOWED = "MethodNotAllowed"
REASON_INTERNAL_ERROR = "InternalError"
REASON_UNSUPPORTED_MEDIA_TYPE = "UnsupportedMediaType"
REASON_TIMEOUT = "Timeout"
CAUSE_RESOURCE_VERSION_TOO_LARGE = "ResourceVersionTooLarge"  # metav1.CauseTypeResourceVersionTooLarge

# The message of a 409 on a stale resourceVersion (registry.OptimisticLockErrorMsg).
OPTIMISTIC_LOCK_ERROR_MSG = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


class ApiError(Exception):
    """A failed API request: what the server answers with a non-2xx Status."""

    # The seq of the trace record of the action that injected this answer (an apiFault), None
    # for an answer the server made itself: the api.response record's `fault` (its side cause).
    fault: int | None = None

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        """The `metav1.Status` body of this error."""
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
        }
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body

    def __repr__(self) -> str:
        return f"ApiError({self.code}, {self.reason!r}, {self.message!r})"


def _details(group_resource: str, name: str) -> dict[str, Any]:
    # StatusDetails{Name, Group, Kind: resource}; empty fields are omitted (omitempty).
    resource, _, group = group_resource.partition(".")
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if group:
        details["group"] = group
    details["kind"] = resource
    return details


def not_found(group_resource: str, name: str) -> ApiError:
    """404 `<resource> "<name>" not found` (errors.NewNotFound)."""
    return ApiError(404, REASON_NOT_FOUND, f'{group_resource} "{name}" not found', _details(group_resource, name))


def already_exists(group_resource: str, name: str) -> ApiError:
    """409 `<resource> "<name>" already exists` (errors.NewAlreadyExists)."""
    return ApiError(
        409, REASON_ALREADY_EXISTS, f'{group_resource} "{name}" already exists', _details(group_resource, name)
    )


def generate_name_conflict(group_resource: str, name: str) -> ApiError:
    """409 AlreadyExists after generateName retries ran out (errors.NewGenerateNameConflict)."""
    details = _details(group_resource, name)
    details["retryAfterSeconds"] = 1
    return ApiError(
        409,
        REASON_ALREADY_EXISTS,
        f'{group_resource} "{name}" already exists, the server was not able to generate a unique name for the object',
        details,
    )


def conflict(group_resource: str, name: str, err: str = OPTIMISTIC_LOCK_ERROR_MSG) -> ApiError:
    """409 `Operation cannot be fulfilled on <resource> "<name>": <err>` (errors.NewConflict)."""
    return ApiError(
        409,
        REASON_CONFLICT,
        f'Operation cannot be fulfilled on {group_resource} "{name}": {err}',
        _details(group_resource, name),
    )


def _cause_error(cause: dict[str, Any]) -> str:
    # field.Error.Error(): "<field>: <body>"; a cause without a field prints "<nil>" upstream.
    return f"{cause.get('field') or '<nil>'}: {cause['message']}"


def aggregate_message(causes: list[dict[str, Any]]) -> str:
    """`field.ErrorList.ToAggregate().Error()`: one message, or `[a, b]`, duplicates dropped."""
    seen: list[str] = []
    for cause in causes:
        text = _cause_error(cause)
        if text not in seen:
            seen.append(text)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]"


def invalid(kind_with_group: str, name: str, causes: list[dict[str, Any]]) -> ApiError:
    """422 `<Kind.group> "<name>" is invalid: <causes>` (errors.NewInvalid).

    `causes` are StatusCause dicts `{"reason", "message", "field"}`; a cause written as
    `{"type": ...}` (field.Error's spelling, as controlplane.validation builds them) is
    accepted and converted.
    """
    status_causes = [
        {"reason": c.get("reason", c.get("type", "")), "message": c["message"], "field": c.get("field", "")}
        for c in causes
    ]
    kind, _, group = kind_with_group.partition(".")
    details: dict[str, Any] = {"name": name}
    if group:
        details["group"] = group
    details["kind"] = kind
    details["causes"] = status_causes
    if status_causes:
        message = f'{kind_with_group} "{name}" is invalid: {aggregate_message(status_causes)}'
    else:
        message = f'{kind_with_group} "{name}" is invalid'
    return ApiError(422, REASON_INVALID, message, details)


def gone(message: str) -> ApiError:
    """410 Gone (errors.NewGone)."""
    return ApiError(410, REASON_GONE, message)


def resource_expired(message: str) -> ApiError:
    """410 with reason Expired: a watch from a compacted resourceVersion (errors.NewResourceExpired)."""
    return ApiError(410, REASON_EXPIRED, message)


def too_large_resource_version(minimum: int, current: int) -> ApiError:
    """504 Timeout with cause ResourceVersionTooLarge: a read or watch from a resourceVersion the
    server has not reached (storage.NewTooLargeResourceVersionError, retry after 1 s)."""
    return ApiError(
        504,
        REASON_TIMEOUT,
        f"Timeout: Too large resource version: {minimum}, current: {current}",
        {
            "causes": [{"reason": CAUSE_RESOURCE_VERSION_TOO_LARGE, "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        },
    )


def bad_request(message: str) -> ApiError:
    """400 BadRequest (errors.NewBadRequest)."""
    return ApiError(400, REASON_BAD_REQUEST, message)


def forbidden(group_resource: str, name: str, err: str, causes: list[dict[str, Any]] | None = None) -> ApiError:
    """403 `<resource> "<name>" is forbidden: <err>` (errors.NewForbidden)."""
    details = _details(group_resource, name)
    if causes:
        details["causes"] = causes
    message = f'{group_resource} "{name}" is forbidden: {err}' if name else f"{group_resource} is forbidden: {err}"
    return ApiError(403, REASON_FORBIDDEN, message, details)


def too_many_requests(message: str = "Too many requests, please try again later.", retry_after: int = 1) -> ApiError:
    """429 TooManyRequests (errors.NewTooManyRequests)."""
    return ApiError(429, REASON_TOO_MANY_REQUESTS, message, {"retryAfterSeconds": retry_after})


def method_not_allowed(group_resource: str, action: str) -> ApiError:
    """405 `<action> is not supported on resources of kind "<resource>"` (errors.NewMethodNotSupported)."""
    return ApiError(
        405,
        REASON_METHOD_NOT_ALLOWED,
        f'{action} is not supported on resources of kind "{group_resource}"',
        _details(group_resource, ""),
    )


PATCH_CONTENT_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)


def unsupported_media_type(accepted: tuple[str, ...] = PATCH_CONTENT_TYPES) -> ApiError:
    """415 for an unknown patch type (negotiation.NewUnsupportedMediaTypeError)."""
    return ApiError(
        415,
        REASON_UNSUPPORTED_MEDIA_TYPE,
        "the body of the request was in an unknown format - accepted media types include: " + ", ".join(accepted),
    )


def internal_error(err: str) -> ApiError:
    """500 `Internal error occurred: <err>` (errors.NewInternalError)."""
    return ApiError(500, REASON_INTERNAL_ERROR, f"Internal error occurred: {err}", {"causes": [{"message": err}]})


# -- predicates (errors.IsNotFound & co.) ------------------------------------------------


def is_not_found(err: BaseException) -> bool:
    return isinstance(err, ApiError) and err.reason == REASON_NOT_FOUND


def is_conflict(err: BaseException) -> bool:
    return isinstance(err, ApiError) and err.reason == REASON_CONFLICT


def is_invalid(err: BaseException) -> bool:
    return isinstance(err, ApiError) and err.reason == REASON_INVALID


def is_already_exists(err: BaseException) -> bool:
    return isinstance(err, ApiError) and err.reason == REASON_ALREADY_EXISTS


def is_gone(err: BaseException) -> bool:
    """True for 410 answers (reason Gone or Expired), as errors.IsGone/IsResourceExpired."""
    return isinstance(err, ApiError) and err.code == 410


def is_forbidden(err: BaseException) -> bool:
    return isinstance(err, ApiError) and err.reason == REASON_FORBIDDEN


def has_status_cause(err: BaseException, cause_type: str) -> bool:
    """True if the error's details list a cause of `cause_type` (errors.HasStatusCause)."""
    if not isinstance(err, ApiError) or not err.details:
        return False
    return any(
        cause.get("reason") == cause_type or cause.get("type") == cause_type
        for cause in err.details.get("causes") or ()
    )
