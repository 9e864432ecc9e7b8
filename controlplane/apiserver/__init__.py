"""The simulated Kubernetes API server (kube-apiserver + etcd) and its client.

Public names: `APIServer`, `Request`, `Watch`, `Client`, `ApiError` and the error helpers and
predicates of `errors` (re-exported here), `ResourceInfo` / `RESOURCES` (the served resources).
See server.py for the guarantees.
"""

from controlplane.apiserver.client import Client, TokenBucketRateLimiter
from controlplane.apiserver.errors import (
    ApiError,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    gone,
    has_status_cause,
    internal_error,
    invalid,
    is_already_exists,
    is_conflict,
    is_forbidden,
    is_gone,
    is_invalid,
    is_not_found,
    method_not_allowed,
    not_found,
    too_many_requests,
)
from controlplane.apiserver.resources import RESOURCES, ResourceInfo
from controlplane.apiserver.server import APIServer, Request
from controlplane.apiserver.watch import ADDED, DELETED, MODIFIED, Watch

__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "RESOURCES",
    "APIServer",
    "ApiError",
    "Client",
    "Request",
    "ResourceInfo",
    "TokenBucketRateLimiter",
    "Watch",
    "already_exists",
    "bad_request",
    "conflict",
    "forbidden",
    "gone",
    "has_status_cause",
    "internal_error",
    "invalid",
    "is_already_exists",
    "is_conflict",
    "is_forbidden",
    "is_gone",
    "is_invalid",
    "is_not_found",
    "method_not_allowed",
    "not_found",
    "too_many_requests",
]
