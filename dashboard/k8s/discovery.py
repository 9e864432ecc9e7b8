"""Discovery, `/version` and the OpenAPI documents: static documents built once from the resources the
simulated API server serves (`controlplane.apiserver.RESOURCES`).

Guarantees (see ../shared/spec/kubectl-surface.md §2 and §8)
----------
* `/version` reports major "1", minor "32": `/usr/bin/kubectl` is a dispatcher that runs the
  kubectl of the reported version, and 1.32 is its built-in one. The document is the core's
  `VERSION_INFO`, the version every simulated kubelet reports too.
* Legacy discovery (`/api`, `/apis`, `/api/v1`, `/apis/apps/v1`) and aggregated discovery
  (`apidiscovery.k8s.io/v2` or `v2beta1`, only when the Accept header lists it, with its exact
  Content-Type) carry shortNames, `categories: [all]`, verbs and the `status` / `scale`
  subresources, and `pods/eviction` (policy/v1 Eviction, create); a group's resources are
  listed by name, as upstream lists them.
* `/openapi/v3` is an index of one document per group/version (`api/v1`, `apis/apps/v1`), each
  URL carrying the hash of its document (kubectl caches by it); the documents are the schemas
  generated from the API server's type table (controlplane/apiserver/openapi.py): what
  `kubectl explain` prints and what kubectl checks before it sends `fieldValidation=Strict`.
* `/openapi/v2` is the same schemas as one Swagger 2.0 JSON document, for clients that accept
  JSON, and as its gnostic protobuf form for those that ask for that (kubectl validating a `kind:
  List` file item by item, `explain --output plaintext-openapiv2`); any other Accept gets 404.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from controlplane.simulation import (
    VERSION_INFO,
    api_http,
    openapi_v2_document,
    openapi_v3_documents,
)
from dashboard.k8s import openapi_v2_proto
from dashboard.k8s.endpoints import review_aggregated_groups, review_group_versions

Obj = dict[str, Any]

VERSION = VERSION_INFO

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

GROUPS = api_http.GROUPS
# The served groups' legacy documents are the core's (controlplane.apiserver.http), which the
# in-kernel door of an embedded operator serves too.
_resources = api_http.group_resources
_verbs = api_http.resource_verbs
_subresources = api_http.discovered_subresources
_SUBRESOURCE_KINDS = api_http.SUBRESOURCE_KINDS
SUBRESOURCE_VERBS = api_http.SUBRESOURCE_VERBS
resource_list = api_http.resource_list
api_group = api_http.api_group


def api_versions(server_address: str) -> Obj:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def api_group_list() -> Obj:
    return api_http.api_group_list(tuple(review_group_versions()))


def _aggregated_group(group: str) -> Obj:
    resources: list[Obj] = []
    for info in _resources(group):
        entry: Obj = {
            "resource": info.plural,
            "responseKind": {"group": group, "version": "v1", "kind": info.kind},
            "scope": "Namespaced" if info.namespaced else "Cluster",
            "singularResource": info.singular,
            "verbs": _verbs(info),
        }
        if info.short_names:
            entry["shortNames"] = list(info.short_names)
        if info.categories:
            entry["categories"] = list(info.categories)
        subs = []
        for sub in _subresources(info):
            other, verbs = _SUBRESOURCE_KINDS.get(sub, (None, SUBRESOURCE_VERBS))
            kind = other if other is not None else {"group": group, "version": "v1", "kind": info.kind}
            subs.append({"subresource": sub, "responseKind": kind, "verbs": verbs})
        if subs:
            entry["subresources"] = subs
        resources.append(entry)
    return {
        "metadata": {"name": group},
        "versions": [{"version": "v1", "resources": resources, "freshness": "Current"}],
    }


def aggregated(group: str, accept: str) -> tuple[str, Obj] | None:
    """The aggregated discovery document for `/api` (`group` "") or `/apis` ("apps") and its
    Content-Type, when the Accept header asks for one; None for legacy discovery."""
    if "g=apidiscovery.k8s.io" not in accept or "as=APIGroupDiscoveryList" not in accept:
        return None
    offered = [part.strip() for part in accept.split(",")]
    version = None
    for part in offered:  # the client's first choice wins
        if "g=apidiscovery.k8s.io" in part and "as=APIGroupDiscoveryList" in part:
            version = "v2" if "v=v2;" in part + ";" and "v=v2beta1" not in part else "v2beta1"
            break
    if version is None:
        return None
    body = {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"apidiscovery.k8s.io/{version}",
        "metadata": {},
        "items": [_aggregated_group(group), *(_review_groups() if group else [])],
    }
    return (AGGREGATED_V2 if version == "v2" else AGGREGATED_V2BETA1), body


def _review_groups() -> list[Obj]:
    """`/apis` also lists the review groups (authorization.k8s.io, authentication.k8s.io)."""
    return review_aggregated_groups()


# -- OpenAPI -------------------------------------------------------------------------------------------
def _text(doc: Obj) -> str:
    return json.dumps(doc, separators=(",", ":"))


OPENAPI_V3_DOCUMENTS: dict[str, str] = {path: _text(doc) for path, doc in openapi_v3_documents().items()}
"""Each served group/version's OpenAPI 3 document, serialised once."""
OPENAPI_V2: str = _text(openapi_v2_document())


@functools.cache
def openapi_v2_protobuf() -> bytes:
    """`/openapi/v2` as kubectl's client-side validation asks for it (dashboard.k8s.openapi_v2_proto),
    encoded at the first request."""
    return openapi_v2_proto.encode_document(json.loads(OPENAPI_V2))


def _hash(text: str) -> str:
    return hashlib.sha512(text.encode()).hexdigest()[:64].upper()


_HASHES = {path: _hash(text) for path, text in OPENAPI_V3_DOCUMENTS.items()}


def openapi_v3_index(prefix: str = "") -> Obj:
    """The index; `prefix` is the server URL's path (`/sim/<id>/k8s`): client-go requests the
    relative URL as the whole path."""
    return {
        "paths": {path: {"serverRelativeURL": f"{prefix}/openapi/v3/{path}?hash={_HASHES[path]}"} for path in _HASHES}
    }
