"""Faults: the failure vocabulary of docs/scenarios.md ("Action verbs"), applied to a running
simulation (reached as a `controlplane.running.RunningWorld`: the world builds its
`FaultInjector`, so this module does not import the world).

Guarantees
----------
* Every fault acts through the same mechanism a real failure would: an API fault is an error
  answer or extra latency from the API server (interceptor and latency hooks), a pod fault is a
  kubelet status write, a node fault stops a kubelet, a watch fault pauses, resumes or drops an
  informer's watch, a controller fault restarts the controller.
* Random choices (which pods, whether a `rate` fault fires) come from the kernel's seeded rng.
* An API fault's answer reads as kube-apiserver words that code (`api_fault_message`): the
  fault's `message` is the cause inside upstream's form for the code, the resource and the name
  the request carried (a create's generateName prefix, as admission names an object whose name is
  not generated yet), never a name drawn from the rng.
"""

from __future__ import annotations

import contextlib
from typing import Any

from controlplane import labels
from controlplane.apiserver import ApiError
from controlplane.apiserver import resources as api_resources
from controlplane.running import RunningWorld

Obj = dict[str, Any]

DEFAULT_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def _request_name(req: Any) -> str:
    """The name an error about `req` names: the request's, else (a create) the body's name or
    its generateName prefix, as admission's extractResourceName does before name generation
    (staging/src/k8s.io/apiserver/pkg/admission/errors.go)."""
    if req.name:
        return str(req.name)
    meta = req.body.get("metadata") if isinstance(req.body, dict) else None
    if isinstance(meta, dict):
        for field in ("name", "generateName"):
            if isinstance(meta.get(field), str) and meta[field]:
                return str(meta[field])
    return ""


def _group_resource(resource: str) -> str:
    # schema.GroupResource.String() of the resource (a subresource's errors name its parent).
    base = resource.split("/", 1)[0]
    info = api_resources.RESOURCES.get(base)
    return info.group_resource if info is not None else base


def api_fault_message(code: int, reason: str, message: str, req: Any) -> str:
    """The message of an injected failure, in the form kube-apiserver gives that code
    (apimachinery pkg/api/errors), the fault's `message` as its cause:

    * 403 `<resource> "<name>" is forbidden: <message>` (NewForbidden; no name: `<resource> is
      forbidden: <message>`);
    * 409 `Operation cannot be fulfilled on <resource> "<name>": <message>` (NewConflict);
    * 500 `Internal error occurred: <message>` (NewInternalError), 504 `Timeout: <message>`
      (NewTimeoutError);
    * 404 `<resource> "<name>" not found` (NewNotFound) and 409 AlreadyExists `<resource>
      "<name>" already exists` have no cause: without a message that is the message, with one
      the message is used as it is;
    * other codes carry the message as it is (NewBadRequest, NewTooManyRequests,
      NewServiceUnavailable do).

    A message already in its code's form is not wrapped twice. Without a message the cause is
    `injected fault: <code> <reason>`."""
    resource = _group_resource(req.resource)
    name = _request_name(req)
    quoted = f'{resource} "{name}"'
    if code == 404 or (code == 409 and reason == "AlreadyExists"):
        if message:
            return message
        if code == 409:
            return f"{quoted} already exists"
        # NewNotFound with a name; a request without one gets the generic 404 text.
        return f"{quoted} not found" if name else "the server could not find the requested resource"
    cause = message or f"injected fault: {code} {reason}"
    if code == 403:
        if " is forbidden: " in cause:
            return cause
        return f"{quoted} is forbidden: {cause}" if name else f"{resource} is forbidden: {cause}"
    if code == 409:
        prefix = "Operation cannot be fulfilled on "
        return cause if cause.startswith(prefix) else f"{prefix}{quoted}: {cause}"
    if code == 500:
        prefix = "Internal error occurred: "
        return cause if cause.startswith(prefix) else prefix + cause
    if code == 504:
        return cause if cause.startswith("Timeout: ") else "Timeout: " + cause
    return cause


class ApiFaultRule:
    """`apiFault {verb, resource, after?, count? | rate?, code, reason?, message?, latency?}`:
    let `after` matching requests through, then fail the next `count` (default 1), or fail each
    with probability `rate`; `latency` delays every matching request. `code: 0` = latency only."""

    def __init__(self, spec: Obj, sim: RunningWorld, rule_id: int = 1) -> None:
        self.id = rule_id
        self.lifted = False
        self.spec = spec
        self.verb = spec["verb"]
        self.resource = spec["resource"]
        self.client = spec.get("client")
        self.after = int(spec.get("after", 0))
        self.rate = spec.get("rate")
        self.count = int(spec.get("count", 1)) if self.rate is None else None
        self.code = int(spec["code"])
        self.reason = spec.get("reason") or DEFAULT_REASONS.get(self.code, "InternalError")
        # The fault's own words (the cause inside the code's form: api_fault_message).
        self.message = str(spec.get("message") or "")
        self.latency = float(spec.get("latency", 0.0))
        self._rng = sim.kernel.rng
        self.matched = 0
        self.failed = 0
        # The action that injected the rule (its action.start record): each answer it fails
        # names it as the api.response's `fault` (controlplane.trace).
        self.cause = sim.trace.cause

    def matches(self, req: Any) -> bool:
        if self.verb != "*" and req.verb != self.verb:
            return False
        resource = req.resource if not req.subresource else f"{req.resource}/{req.subresource}"
        if self.resource != "*" and resource != self.resource:
            return False
        # `client` is a User-Agent prefix (`kopf/`, `kubectl/`): external clients append their
        # version and platform, which a fault aimed at "kopf" should not have to spell out.
        return self.client is None or str(req.client).startswith(self.client)

    @property
    def exhausted(self) -> bool:
        return self.count is not None and self.failed >= self.count

    @property
    def in_force(self) -> bool:
        """Still able to fail or slow a request: not lifted, and not used up (a rule with
        latency stays in force after its failures are used up, as its latency does)."""
        return not self.lifted and (not self.exhausted or self.latency > 0)

    def intercept(self, req: Any) -> ApiError | None:
        if self.lifted or self.code == 0 or self.exhausted or not self.matches(req):
            return None
        self.matched += 1
        if self.matched <= self.after:
            return None
        if self.rate is not None and self._rng.random() >= self.rate:
            return None
        self.failed += 1
        details = {"name": req.name or "", "kind": req.resource}
        err = ApiError(self.code, self.reason, api_fault_message(self.code, self.reason, self.message, req), details)
        err.fault = self.cause
        return err

    def extra_latency(self, req: Any) -> float:
        return self.latency if self.latency and not self.lifted and self.matches(req) else 0.0

    def describe(self) -> Obj:
        return {
            **self.spec,
            "id": self.id,
            "matched": self.matched,
            "failed": self.failed,
            "exhausted": self.exhausted,
            "lifted": self.lifted,
            "inForce": self.in_force,
        }


class FaultInjector:
    def __init__(self, sim: RunningWorld) -> None:
        self.sim = sim
        self.api_rules: list[ApiFaultRule] = []
        # The server's hooks are installed with the first rule: until then every request would
        # pay two calls that return at once (without them its latency is the same float).
        self._hooked = False
        # Every `watchFault {client: …}`, in the order applied: {client, resource, fault}. The
        # watches of external clients live in the host (they are not part of the simulation);
        # the host reads this log through the facade and applies each entry to the watches whose
        # User-Agent starts with `client`, so the fault is an action like any other (recorded,
        # replayed, at a virtual instant) while its effect is on streams outside the core.
        self.client_watch_faults: list[Obj] = []

    def _intercept(self, req: Any) -> ApiError | None:
        if not self.api_rules:
            return None
        for rule in self.api_rules:
            err = rule.intercept(req)
            if err is not None:
                return err
        return None

    def _latency(self, req: Any) -> float:
        if not self.api_rules:
            return 0.0
        return sum(rule.extra_latency(req) for rule in self.api_rules)

    # -- verbs ------------------------------------------------------------------------------
    def api_fault(self, spec: Obj) -> Obj:
        """Add a rule; its `id` (1, 2, ... in order of injection) is what `liftFault` names."""
        rule = ApiFaultRule(spec, self.sim, len(self.api_rules) + 1)
        self.api_rules.append(rule)
        if not self._hooked:
            self._hooked = True
            self.sim.server.interceptors.append(self._intercept)
            self.sim.server.latency_hooks.append(self._latency)
        return {"rule": rule.id - 1, "id": rule.id}

    def lift_fault(self, spec: Obj) -> Obj:
        """`liftFault {apiFault: ID | all}`: the rule stops failing and slowing requests."""
        target = spec["apiFault"]
        if target == "all":
            lifted = [rule.id for rule in self.api_rules if not rule.lifted]
        else:
            if not 1 <= target <= len(self.api_rules):
                return {"error": f"no apiFault rule {target} (there are {len(self.api_rules)})"}
            if self.api_rules[target - 1].lifted:
                return {"error": f"apiFault rule {target} is already lifted"}
            lifted = [target]
        for rule_id in lifted:
            self.api_rules[rule_id - 1].lifted = True
        return {"lifted": lifted}

    def clear_api_faults(self) -> None:
        self.api_rules.clear()

    def pod_fault(self, spec: Obj) -> Obj:
        namespace = spec.get("namespace", "default")
        server = self.sim.server
        if "name" in spec:
            pods = [
                p
                for p in server.objects("pods")
                if p["metadata"]["namespace"] == namespace and p["metadata"]["name"] == spec["name"]
            ]
            if not pods:
                return {"error": f'pods "{spec["name"]}" not found', "pods": []}
        else:
            selector = labels.parse(spec["selector"])
            pods = [
                p
                for p in server.objects("pods")
                if p["metadata"]["namespace"] == namespace
                and not p["metadata"].get("deletionTimestamp")
                and selector.matches(p["metadata"].get("labels"))
            ]
            count = spec.get("count")
            if count is not None and count < len(pods):
                pods = self.sim.kernel.rng.sample(pods, count)
                pods.sort(key=lambda p: p["metadata"]["name"])
        fault = spec["fault"]
        names: list[str] = []
        skipped: list[str] = []
        for pod in pods:
            name = pod["metadata"]["name"]
            names.append(name)
            if fault == "delete":
                with contextlib.suppress(ApiError):
                    server.delete("pods", namespace, name, client="user")
                continue
            kubelet = self.sim.nodes.kubelet_for(pod)
            acted = False
            if kubelet is not None:
                if fault == "notReady":
                    acted = kubelet.set_ready(pod, False)
                elif fault == "ready":
                    acted = kubelet.set_ready(pod, True)
                else:
                    acted = getattr(kubelet, fault)(pod)
            if not acted:
                # Not bound to a node, its kubelet is down, or no container is running.
                skipped.append(name)
        result: Obj = {"pods": names}
        if skipped:
            result["skipped"] = skipped
        return result

    def node_fault(self, spec: Obj) -> Obj:
        name = spec["name"]
        if name not in self.sim.nodes.kubelets:
            if self.sim.server.peek("nodes", None, name) is not None:
                return {"error": f'node "{name}" is not simulated (it has no kubelet): only node-1 … node-N are'}
            return {"error": f'nodes "{name}" not found', "code": 404}
        if spec["fault"] == "down":
            self.sim.nodes.node_down(spec["name"])
        else:
            self.sim.nodes.node_up(spec["name"])
        return {"node": spec["name"]}

    def watch_fault(self, spec: Obj) -> Obj:
        resource, fault = spec["resource"], spec["fault"]
        if "client" in spec:
            return self._client_watch_fault(spec["client"], resource, fault, spec.get("delay"))
        wanted = spec.get("controller")
        if wanted is not None and wanted not in self.sim.controllers:
            return {"error": f"controller {wanted} is not running in this simulation"}
        touched = []
        for name, controller in self.sim.controllers.items():
            if spec.get("controller") not in (None, name):
                continue
            for informer in controller.informers:
                if informer.resource != resource:
                    continue
                touched.append(informer.name)
                reflector = informer.reflector
                if fault == "pause":
                    reflector.pause()
                    if "delay" in spec:
                        # `delay`: the view stays stale for that long, then catches up by itself —
                        # unless a later pause (with its own delay, or none) or a resume took over.
                        self.sim.kernel.call_later(
                            float(spec["delay"]), self._resume_if_same, informer, reflector.pauses
                        )
                elif fault == "resume":
                    reflector.resume()
                else:
                    reflector.drop()
        if self.sim.trace.enabled:
            self.sim.trace.emit("watch.fault", resource=resource, fault=fault, informers=touched)
        return {"informers": touched}

    def _client_watch_fault(self, client: str, resource: str, fault: str, delay: Any) -> Obj:
        index = len(self.client_watch_faults)
        self.client_watch_faults.append({"client": client, "resource": resource, "fault": fault})
        self._to_operators(self.client_watch_faults[-1])
        if fault == "pause" and delay is not None:
            self.sim.kernel.call_later(float(delay), self._resume_client_if_same, index)
        if self.sim.trace.enabled:
            self.sim.trace.emit("watch.fault", resource=resource, fault=fault, informers=[], client=client)
        return {"client": client, "clientWatchFault": index + 1}

    def _to_operators(self, entry: Obj) -> None:
        # The watches of the world's own operators are inside the simulation: the entry applies
        # to them at once (those of external clients wait for the host's next collect).
        operators = getattr(self.sim, "operators", None)
        if operators is not None:
            operators.client_watch_fault(entry)

    def _resume_client_if_same(self, index: int) -> None:
        # As `_resume_if_same`: only when no later pause or resume of the same client and
        # resource took over since this pause.
        paused = self.client_watch_faults[index]
        key = (paused["client"], paused["resource"])
        later = [e for e in self.client_watch_faults[index + 1 :] if (e["client"], e["resource"]) == key]
        if any(e["fault"] in ("pause", "resume") for e in later):
            return
        self.client_watch_faults.append({**paused, "fault": "resume"})
        self._to_operators(self.client_watch_faults[-1])
        if self.sim.trace.enabled:
            resource, client = paused["resource"], paused["client"]
            self.sim.trace.emit("watch.fault", resource=resource, fault="resume", informers=[], client=client)

    def _resume_if_same(self, informer: Any, pauses: int) -> None:
        # Only the pause this timer belongs to: a restart replaces informers (this one is then
        # stopped), and a later pause or resume of the same reflector supersedes it.
        reflector = informer.reflector
        if reflector.paused and reflector.pauses == pauses:
            reflector.resume()

    def controller_fault(self, spec: Obj) -> Obj:
        if "operator" in spec:  # an embedded operator (controlplane.operators)
            operators = getattr(self.sim, "operators", None)
            if operators is None or not operators.has(spec["operator"]):
                return {"error": f"operator {spec['operator']} is not running in this simulation"}
            if spec["fault"] == "slow":
                operators.slow(spec["operator"], spec["seconds"])
                return {"operator": spec["operator"], "slow": spec["seconds"]}
            return {"operator": spec["operator"], "restarts": operators.restart(spec["operator"])}
        controller = self.sim.controllers.get(spec["controller"])
        if controller is None:
            return {"error": f"controller {spec['controller']} is not running in this simulation"}
        controller.restart()
        return {"controller": spec["controller"], "restarts": controller.restarts}
