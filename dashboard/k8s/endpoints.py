"""The endpoints every Kubernetes client expects beyond the resources: health, `/metrics` under a
simulation's URL, who-am-I and can-I reviews, container logs, and a plain refusal of the streams a
simulated pod cannot serve (exec, attach, port-forward).

`dashboard.k8s.api` routes here (a handler gets its `wire.Request`); the answers follow
kube-apiserver's (issue #18 §3).

Guarantees
----------
* `/healthz`, `/livez`, `/readyz` (and `/sim/<id>/k8s/...`) answer as kube-apiserver's
  `healthz.InstallHandler` does: `ok`, or with `?verbose` one `[+]<check> ok` line per check and
  `<name> check passed`; a failing check gives 500 with `[-]<check> failed: reason withheld`
  and `<name> check failed`; `?exclude=<check>` skips one (`[+]<check> excluded: ok`), and
  `/<name>/<check>` runs one; with a trailing slash they are 404, as the exact paths of
  kube-apiserver's PathRecorderMux are. The checks are real: `ping` (this process answers HTTP) and
  `etcd` (the simulation's store answers its host within `HEALTH_TIMEOUT`). Anonymous, as the
  `system:public-info-viewer` role makes them on a cluster: no token is needed, but a wrong token
  presented is still 401 (authentication fails before authorization there too). They reveal only
  whether a simulation is running, which its dashboard page shows anyone already.
* The reviews answer for the one identity the access token is: user `ctrlscope-admin` in groups
  `system:masters` and `system:authenticated`, allowed every verb but `impersonate` on every
  resource and path (the token is all or nothing; there is no RBAC). A caller without the token
  never reaches them (401). A request with an `Impersonate-*` header is refused with the 403
  kube-apiserver gives a user without the `impersonate` verb (`refuse_impersonation`), so
  `kubectl --as=bob` neither reads nor writes, and `auth can-i --as=bob` is refused.
  Authorization is not existence: as for `system:masters` on a cluster, "yes" is also the answer
  for a resource this server does not serve.
* `pods/log` is the container's log as `Simulation.container_log` tells it (what the kubelet did),
  `text/plain`, with `container`, `previous`, `timestamps`, `tailLines`, `limitBytes`,
  `sinceSeconds`/`sinceTime`; `follow` streams new lines until the container instance stops, the
  pod or the simulation goes, the client leaves, or `FOLLOW_LIMIT` seconds pass.
* `pods/exec`, `pods/attach`, `pods/portforward` (and `kubectl cp`, which execs `tar`): 404 for an
  unknown pod, else a 400 Status saying that the simulated pod runs no process. A websocket
  upgrade on any Kubernetes API path is refused before it is accepted (`api.RefuseWebsocket`), so
  kubectl falls back to SPDY, whose plain POST gets that Status and prints its message.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import math
from typing import Any
from urllib.parse import parse_qs, unquote

from controlplane.simulation import EPOCH, MAX_REQUEST_BYTES, parse_rfc3339
from dashboard.k8s.wire import Failure, Request, decode, ensure_running, not_found, wait_disconnect

Obj = dict[str, Any]
log = logging.getLogger(__name__)

# -- health ---------------------------------------------------------------------------------------------
HEALTH_CHECKS = ("ping", "etcd")
HEALTH = {"healthz": HEALTH_CHECKS, "livez": HEALTH_CHECKS, "readyz": HEALTH_CHECKS}
HEALTH_TIMEOUT = 5.0  # seconds the `etcd` check waits for the simulation's host
MAX_EXCLUDES = 16


def is_health(segs: list[str]) -> bool:
    return bool(segs) and segs[0] in HEALTH and len(segs) <= 2


def is_health_path(path: str) -> bool:
    """A path of the health endpoints (`/livez`, `/livez/ping`, …). Not with a trailing slash:
    kube-apiserver's PathRecorderMux matches them exactly, so `/healthz/` is a 404 there."""
    return is_health([s for s in path.split("/") if s]) and not path.endswith("/")


async def _check(call: Request, name: str) -> bool:
    if name == "ping":
        return True
    from dashboard.host import request

    try:
        await ensure_running(call.sim_id)
        answer = await request(call.sim_id, {"op": "k8s_health"}, control=True, timeout=HEALTH_TIMEOUT)
    except (Failure, LookupError):
        return False
    except Exception:  # the check fails, and the server answers on (healthz withholds the reason)
        log.exception("health check %s of simulation %s", name, call.sim_id)
        return False
    return answer.get("code") == 200


async def health(call: Request, segs: list[str]) -> None:
    if call.method != "GET":
        raise Failure(405, "MethodNotAllowed", f"{call.method} is not supported on this path")
    name, checks = segs[0], HEALTH[segs[0]]
    if len(segs) == 2:  # one check: `ok`, or 500 with its error (healthz.adaptCheckToHandler)
        if segs[1] not in checks:
            raise not_found()
        if await _check(call, segs[1]):
            await call.reply("ok", content_type="text/plain; charset=utf-8")
        else:
            await call.reply(
                f"internal server error: {segs[1]} check failed\n", 500, content_type="text/plain; charset=utf-8"
            )
        return
    raw = parse_qs(call.scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    excluded = {e for value in raw.get("exclude", [])[:MAX_EXCLUDES] for e in value.split(",") if e}
    lines, failed = [], False
    for check in checks:
        if check in excluded:
            excluded.discard(check)
            lines.append(f"[+]{check} excluded: ok\n")
        elif await _check(call, check):
            lines.append(f"[+]{check} ok\n")
        else:
            failed = True
            lines.append(f"[-]{check} failed: reason withheld\n")
    if excluded:
        quoted = ",".join(f"{e!r}".replace("'", '"') for e in sorted(excluded))
        lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}\n")
    text_plain = "text/plain; charset=utf-8"
    if failed:  # always verbose on failure, as kube-apiserver
        await call.reply("".join(lines) + f"{name} check failed\n", 500, content_type=text_plain)
    elif "verbose" in raw:
        await call.reply("".join(lines) + f"{name} check passed\n", content_type=text_plain)
    else:
        await call.reply("ok", content_type=text_plain)


# -- /metrics of one simulation -------------------------------------------------------------------------
async def metrics(call: Request) -> None:
    from dashboard.k8s.metrics import exposition

    if call.method != "GET":
        raise Failure(405, "MethodNotAllowed", f"{call.method} is not supported on this path")
    await ensure_running(call.sim_id)
    content_type, text = await exposition(only=call.sim_id)
    await call.reply(text, content_type=content_type)


# -- who am I, can I ------------------------------------------------------------------------------------
USERNAME = "ctrlscope-admin"
ANONYMOUS = "system:anonymous"
GROUPS = ["system:masters", "system:authenticated"]
ALLOWED_REASON = (
    "ctrlscope: the access token grants every verb but impersonate on every resource (all or nothing: no RBAC)"
)
# Every verb an authorizer is asked about but `impersonate`, which the token does not grant: the
# requests of one identity are never someone else's (`refuse_impersonation`).
VERBS = ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection",
         "proxy", "bind", "escalate", "approve", "sign", "use"]  # fmt: skip
IMPERSONATE = "impersonate"
IMPERSONATE_EXTRA = "impersonate-extra-"


def refuse_impersonation(call: Request, authenticated: bool) -> None:
    """Refuse a request that asks to act as someone else (`Impersonate-User`, `-Group`, `-Uid`,
    `-Extra-<key>`, as kubectl's `--as`, `--as-group`, `--as-uid` send them) with the 403 that
    kube-apiserver's impersonation filter answers a user without the `impersonate` verb
    (`staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go`, the message of
    `responsewriters.Forbidden`): the first thing asked for is checked, and refused. Before this,
    the headers were ignored and `--as=bob` wrote as the token's identity."""
    asked: tuple[str, str, str, str] | None = None  # (resource, subresource, namespace, name)
    for raw_name, raw_value in call.scope.get("headers", ()):
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1").strip()
        if not value:  # an empty header asks for nothing (upstream reads them so too)
            continue
        if name == "impersonate-user":
            parts = value.split(":")
            if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"]:
                asked = ("serviceaccounts", "", parts[2], parts[3])
            else:
                asked = ("users", "", "", value)
            break  # the user is checked first, as upstream builds its requests
        if asked is not None:
            continue
        if name == "impersonate-group":
            asked = ("groups", "", "", value)
        elif name == "impersonate-uid":
            asked = ("uids", "", "", value)
        elif name.startswith(IMPERSONATE_EXTRA):
            asked = ("userextras", unquote(name[len(IMPERSONATE_EXTRA) :]), "", value)
    if asked is None:
        return
    resource, subresource, namespace, target = asked
    user = USERNAME if authenticated else ANONYMOUS
    what = f"{resource}/{subresource}" if subresource else resource
    where = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    message = f'User "{user}" cannot {IMPERSONATE} resource "{what}" in API group "" {where}'
    # sanitizer.Replace of responsewriters.Forbidden, and apierrors.NewForbidden's prefix.
    message = message.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    subject = f'{resource} "{target}"' if target else resource
    details = {"name": target, "kind": resource} if target else {"kind": resource}
    raise Failure(403, "Forbidden", f"{subject} is forbidden: {message}", details)


PROTOBUF = "application/vnd.kubernetes.protobuf"

# group → (version, {plural: kind}); served for `create` only, cluster-scoped, as upstream.
REVIEWS: dict[str, tuple[str, dict[str, str]]] = {
    "authorization.k8s.io": (
        "v1",
        {"selfsubjectaccessreviews": "SelfSubjectAccessReview", "selfsubjectrulesreviews": "SelfSubjectRulesReview"},
    ),
    "authentication.k8s.io": ("v1", {"selfsubjectreviews": "SelfSubjectReview"}),
}


def review_resource_list(group: str) -> Obj:
    version, kinds = REVIEWS[group]
    resources = [
        {"name": plural, "singularName": kind.lower(), "namespaced": False, "kind": kind, "verbs": ["create"]}
        for plural, kind in kinds.items()
    ]
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}", "resources": resources}


def review_aggregated_groups() -> list[Obj]:
    items = []
    for group, (version, kinds) in REVIEWS.items():
        resources = [
            {
                "resource": plural,
                "responseKind": {"group": group, "version": version, "kind": kind},
                "scope": "Cluster",
                "singularResource": kind.lower(),
                "verbs": ["create"],
            }
            for plural, kind in kinds.items()
        ]
        items.append(
            {
                "metadata": {"name": group},
                "versions": [{"version": version, "resources": resources, "freshness": "Current"}],
            }
        )
    return items


def review_group_versions() -> list[Obj]:
    groups = []
    for group, (version, _) in REVIEWS.items():
        gv = {"groupVersion": f"{group}/{version}", "version": version}
        groups.append({"name": group, "versions": [gv], "preferredVersion": gv})
    return groups


async def reviews(call: Request, segs: list[str]) -> None:
    """`/apis/<review group>...`: its discovery documents (GET) or a review (POST)."""
    group = segs[1]
    version, kinds = REVIEWS[group]
    if len(segs) == 2 and call.method == "GET":
        gv = {"groupVersion": f"{group}/{version}", "version": version}
        body: Obj = {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": [gv], "preferredVersion": gv}
        await call.reply(body)
        return
    if len(segs) < 3 or segs[2] != version:
        raise not_found()
    if len(segs) == 3 and call.method == "GET":
        await call.reply(review_resource_list(group))
        return
    if len(segs) != 4 or segs[3] not in kinds:
        raise not_found()
    kind = kinds[segs[3]]
    if call.method != "POST":
        raise Failure(
            405, "MethodNotAllowed", f'{call.method.lower()} is not supported on resources of kind "{segs[3]}"'
        )
    spec = await _review_spec(call, f"{group}/{version}", kind)
    review: Obj = {
        "kind": kind,
        "apiVersion": f"{group}/{version}",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
    }
    if kind == "SelfSubjectAccessReview":
        attributes = [key for key in ("resourceAttributes", "nonResourceAttributes") if spec.get(key)]
        if spec and len(attributes) != 1:
            cause = {
                "reason": "FieldValueInvalid",
                "message": "Invalid value: exactly one of nonResourceAttributes or resourceAttributes must be specified",  # noqa: E501
                "field": "spec.resourceAttributes",
            }
            raise Failure(
                422,
                "Invalid",
                f'{kind}.{group} "" is invalid: spec.resourceAttributes: {cause["message"]}',
                {"group": group, "kind": kind, "causes": [cause]},
            )
        asked = spec.get("resourceAttributes") or {}
        if isinstance(asked, dict) and asked.get("verb") == IMPERSONATE:
            review["status"] = {"allowed": False}  # as RBAC answers a verb no rule grants: no reason
        else:
            review["status"] = {"allowed": True, "reason": ALLOWED_REASON}
    elif kind == "SelfSubjectRulesReview":
        review["status"] = {
            "resourceRules": [{"verbs": list(VERBS), "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
    else:
        review.pop("spec")
        review["status"] = {"userInfo": {"username": USERNAME, "groups": list(GROUPS)}}
    await call.reply(review, 201)


async def _review_spec(call: Request, api_version: str, kind: str) -> Obj:
    """The review's spec from a JSON body, or a protobuf SelfSubjectAccessReview's (the answer
    depends on its verb); {} from another protobuf review, whose envelope is checked but whose
    spec is not decoded: no answer depends on it (the token is all or nothing)."""
    raw = await call.read_body()
    if len(raw) > MAX_REQUEST_BYTES:
        raise Failure(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_REQUEST_BYTES}")
    content_type = call.headers.get("content-type", "").split(";")[0].strip()
    if content_type == PROTOBUF and kind == "SelfSubjectAccessReview":  # its verb matters (impersonate)
        from dashboard.k8s import protobuf

        try:
            _, _, obj = protobuf.decode(raw, (kind,))
        except (protobuf.ProtobufError, protobuf.UnsupportedKind) as exc:
            raise Failure(400, "BadRequest", f"the body of the request is not a protobuf {kind}: {exc}") from None
        return obj.get("spec", {})
    if content_type == PROTOBUF:
        if not raw.startswith(b"k8s\x00") or api_version.encode() not in raw[:64] or kind.encode() not in raw[:96]:
            raise Failure(400, "BadRequest", f"the body of the request is not a protobuf {kind}")
        return {}
    if not raw.strip():
        raise Failure(400, "BadRequest", "the body of the request was empty")
    body = decode(raw, yaml_ok=False)
    if not isinstance(body, dict):
        raise Failure(400, "BadRequest", f"the body of the request must be a {kind} object")
    for field, expected in (("apiVersion", api_version), ("kind", kind)):
        if body.get(field) not in (None, "", expected):
            raise Failure(400, "BadRequest", f"{field}: must be {expected!r} (got {body.get(field)!r})")
    spec = body.get("spec", {})
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        raise Failure(400, "BadRequest", "spec: must be an object")
    return spec


# -- pods/log -------------------------------------------------------------------------------------------
FOLLOW_LIMIT = 600.0  # seconds a followed log streams at most
FOLLOW_POLL = 0.5  # seconds between looks at a followed container
MAX_INT = 2**31 - 1
NO_PROCESS = "ctrlscope: pod {name} is simulated: it runs no process, so there is nothing to {what}"
STREAMS = {"exec": "exec into", "attach": "attach to", "portforward": "forward a port to"}
POD_SUBRESOURCES = frozenset({"log", *STREAMS})


def _int_option(query: dict[str, str], key: str, minimum: int) -> int | None:
    value = query.get(key)
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        raise Failure(400, "BadRequest", f"{key}: invalid value {value[:64]!r}: must be an integer") from None
    if number < minimum or number > MAX_INT:
        raise Failure(400, "BadRequest", f"{key}: invalid value {number}: must be between {minimum} and {MAX_INT}")
    return number


def _bool_option(query: dict[str, str], key: str) -> bool:
    value = query.get(key, "").lower()
    if value in ("", "false", "0"):
        return False
    if value in ("true", "1"):
        return True
    raise Failure(400, "BadRequest", f"{key}: invalid value {value[:64]!r}: must be true or false")


class LogOptions:
    """The PodLogOptions of a request (validated: every number bounded)."""

    def __init__(self, query: dict[str, str]) -> None:
        self.container = query.get("container") or None
        self.previous = _bool_option(query, "previous")
        self.follow = _bool_option(query, "follow")
        self.timestamps = _bool_option(query, "timestamps")
        self.tail_lines = _int_option(query, "tailLines", 0)
        self.limit_bytes = _int_option(query, "limitBytes", 1)
        since_seconds = _int_option(query, "sinceSeconds", 1)
        self.since_time: float | None = None
        if query.get("sinceTime"):
            if since_seconds is not None:
                raise Failure(400, "BadRequest", "sinceTime: at most one of sinceTime or sinceSeconds may be specified")
            try:
                self.since_time = parse_rfc3339(query["sinceTime"][:64])
            except ValueError:
                raise Failure(400, "BadRequest", f"sinceTime: invalid value {query['sinceTime'][:64]!r}") from None
            if not math.isfinite(self.since_time):
                raise Failure(400, "BadRequest", "sinceTime: invalid value")
        self.since_seconds = since_seconds

    def select(self, lines: list[list[Any]], now: float) -> list[list[Any]]:
        since = self.since_time if self.since_time is not None else None
        if self.since_seconds is not None:
            since = now - self.since_seconds
        if since is not None:
            lines = [line for line in lines if float(line[0]) >= since]
        if self.tail_lines is not None:
            lines = lines[len(lines) - self.tail_lines :] if self.tail_lines else []
        return lines

    def text(self, lines: list[list[Any]]) -> str:
        return "".join(f"{_nano(float(t))} {text}\n" if self.timestamps else f"{text}\n" for t, text in lines)


def _nano(t: float) -> str:
    """A virtual time as the kubelet stamps log lines (RFC 3339 with nanoseconds)."""
    whole = math.floor(t)
    nanos = round((t - whole) * 1e9)
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, 0
    stamp = (EPOCH + datetime.timedelta(seconds=whole)).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{nanos:09d}Z"


async def pod_subresource(call: Request, namespace: str | None, name: str | None, subresource: str) -> None:
    if namespace is None or not name:
        raise Failure(404, "NotFound", "the server could not find the requested resource")
    if subresource == "log":
        if call.method != "GET":
            raise Failure(
                405, "MethodNotAllowed", f'{call.method.lower()} is not supported on resources of kind "pods/log"'
            )
        await _log(call, namespace, name, LogOptions(call.query))
        return
    # exec, attach, portforward: GET (websocket) or POST (SPDY). The pod must exist first, as upstream.
    answer = await call.ask({"op": "k8s_get", "resource": "pods", "namespace": namespace, "name": name})
    if answer.get("code") != 200:
        await call.reply_text(answer)
        return
    raise Failure(400, "BadRequest", NO_PROCESS.format(name=name, what=STREAMS[subresource]))


async def _ask_log(call: Request, namespace: str, name: str, options: LogOptions, previous: bool) -> Obj:
    cmd = {
        "op": "k8s_log",
        "namespace": namespace,
        "name": name,
        "container": options.container,
        "previous": previous,
    }
    return await call.ask(cmd)


async def _log(call: Request, namespace: str, name: str, options: LogOptions) -> None:
    answer = await _ask_log(call, namespace, name, options, options.previous)
    if "lines" not in answer:
        await call.reply_text(answer)
        return
    lines = options.select(answer["lines"], float(answer["now"]))
    budget = options.limit_bytes if options.limit_bytes is not None else None
    text = options.text(lines)
    if not options.follow or options.previous or answer.get("finished") or not answer.get("containerID"):
        await call.reply(_cut(text, budget), content_type="text/plain")
        return
    await call.send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/plain"), (b"cache-control", b"no-cache, private")],
        }
    )
    sent = len(answer["lines"])
    container_id = answer["containerID"]
    first = _cut(text, budget)
    if budget is not None:
        budget -= len(first.encode())
    await call.chunk(first)
    if call.head_only:
        await call.chunk("", last=True)
        return
    await _follow(call, namespace, name, options, container_id, sent, budget)


async def _follow(
    call: Request, namespace: str, name: str, options: LogOptions, container_id: str, sent: int, budget: int | None
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + FOLLOW_LIMIT
    disconnected = asyncio.ensure_future(wait_disconnect(call.receive))
    try:
        while loop.time() < deadline and (budget is None or budget > 0):
            done, _ = await asyncio.wait({disconnected}, timeout=FOLLOW_POLL)
            if done:
                return
            try:
                answer = await _ask_log(call, namespace, name, options, False)
                if answer.get("containerID") != container_id and "lines" in answer:
                    # The followed instance ended and the next one started between two looks:
                    # its last lines are the previous instance's log.
                    answer = await _ask_log(call, namespace, name, options, True)
            except Failure:
                break  # the simulation stopped
            if "lines" not in answer or answer.get("containerID") != container_id:
                break  # the pod (or the instance) is gone
            new = answer["lines"][sent:]
            sent = len(answer["lines"])
            if new:
                text = _cut(options.text(new), budget)
                if budget is not None:
                    budget -= len(text.encode())
                await call.chunk(text)
            if answer.get("finished"):
                break
        await call.chunk("", last=True)
    finally:
        disconnected.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await disconnected


def _cut(text: str, budget: int | None) -> str:
    if budget is None:
        return text
    return text.encode()[: max(budget, 0)].decode(errors="ignore")
