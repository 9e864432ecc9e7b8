"""The world: one deterministic simulation (`Simulation`), its value types (`Position`,
`LimitError`, ...) and the scenario data built from a session (`configured`, `cut_scenario`,
`request_of`). Code outside `controlplane/` reaches it through the facade,
`controlplane.simulation`; the core's own modules import it from here.

Guarantees
----------
* One `Simulation` is one deterministic world: a kernel, a trace, an API server, the garbage
  collector, nodes with their scheduler and kubelets, and the controllers. Same scenario + same seed
  + same actions at the same virtual times ⇒ the same trace and the same report, byte for byte.
* Every change to the world goes through `apply(action)` with the action vocabulary of docs/scenarios.md
  (scenario files, dashboard buttons and the websocket use the same one). A rejected action is
  recorded like any failed request and reported back; it never stops the run.
* Time moves only through `step`, `step_stage`, `step_sync`, `advance`, `run_until` and
  `run_until_predicate`; pacing against the wall clock is the host's business.
* Nothing a user sends ends a session. An action that raises is logged as failed with its
  error; a sync that raises fails and is requeued (see the controller); any other callback or
  process that raises is reported as an `error` trace record and the rest of the world runs on.
  Errors are kept in `errors` (and the report's `errors`, present only when there are some).
* Every run has ceilings (`RunLimits`, set by whoever runs it): a scenario asking for more pods
  or nodes than the ceiling is refused by `start` (ScenarioError); pod creates beyond it are
  refused by the API server as an exceeded quota; once the event ceiling is reached the
  simulation halts (`halted` says why, an `error` record tells the trace) instead of running on.
* What a live session accepts replays: `act` refuses, unlogged and with nothing changed, an
  action that would make the session's cut (`export_scenario`) a file `start` or the scenario
  checks refuse (`check_replayable`: a scale past the pod ceiling, a fault on a node that never
  was ...). A restore, a re-open, a fork and `report.json?at=` replay that cut.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from pathlib import PurePath
from typing import Any, NamedTuple

from controlplane.apiserver import ApiError, APIServer, Client, Request, decode
from controlplane.apiserver.http import request_of as request_of  # a `request` action's Request
from controlplane.causes import FILTER_FIELDS, MAX_RECORDS, RecordLog
from controlplane.containerlog import ContainerLog, container_log
from controlplane.controllers.config import ControllerConfig
from controlplane.controllers.registry import OPERATOR, REGISTRY, by_name
from controlplane.expectations import EXPECTATIONS_TIMEOUT
from controlplane.faults import FaultInjector
from controlplane.garbagecollector import GarbageCollector
from controlplane.history import RunHistory
from controlplane.kernel import Kernel, Task, vtime
from controlplane.kubelet import Kubelet
from controlplane.limits import DEFAULT_RUN_LIMITS, MAX_ACTIONS, RunLimits
from controlplane.namespace import NamespaceController
from controlplane.nodes import NodeSimulator
from controlplane.replicaset import ReplicaSetController
from controlplane.replication import ReplicationManager
from controlplane.scenario import (
    ACTION_VERBS,
    PodDemand,
    Scenario,
    ScenarioError,
    TimelineCheck,
    check_config,
    check_config_versions,
    check_verb,
    demand,
    load_file,
    merge_config,
)
from controlplane.stepping import STEPS, Target, step_until
from controlplane.trace import Record, Trace
from controlplane.vocabulary import KIND_RESOURCES
from controlplane.workqueue import DelayingQueue

Obj = dict[str, Any]

CLUSTER_SCOPED = {"nodes", "namespaces"}
# The kinds a world reports and snapshots are its own (`Simulation.owner_kinds`, `report_kinds`:
# the controllers' kinds, then Pod, Node, Event; docs/scenarios.md): the kinds of the controllers
# it runs or runs by default (`Registry.in_world`), so a controller that is off by default (the
# Deployment controller) changes nothing in a world that does not run it.
NODE_CONFIG_KEYS = (
    "nodes",
    "podStartup",
    "podReadyDelay",
    "podShutdown",
    "nodeMonitorGracePeriod",
    "tolerationSeconds",
    "apiLatency",
    "kubeletQPS",
    "kubeletBurst",
    "schedulerQPS",
    "schedulerBurst",
    "imageFaults",
)
KUBELET_STEPS = {
    "_start_containers": "containers start",
    "_become_ready": "readiness",
    "_restart_container": "crash-loop restart",
    "_containers_stopped": "containers stop",
    "_sync": "status retry",
    "_image_pull_backoff": "image pull back-off",
    "_retry_pull": "image pull retry",
}
MAX_ERRORS_KEPT = 1000  # `errors` keeps the first ones; `errors_dropped` counts the rest


RECORD_FILTERS = FILTER_FIELDS  # what `records` filters on (the trace view's inputs)


class Position(NamedTuple):
    """A point of a run: `events` kernel events have run, the last trace record is `seq`, the
    clock reads `time`. Several positions share an instant (one per event run at it)."""

    events: int
    seq: int
    time: float

    def to_json(self) -> Obj:
        return {"events": self.events, "seq": self.seq, "time": self.time}


class LimitError(ScenarioError):
    """A run reached one of its ceilings (RunLimits): the message says which and how to raise it."""


def _error_text(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:500]}" if text else type(exc).__name__


class Simulation:
    def __init__(
        self,
        scenario: Scenario | None = None,
        *,
        seed: int | None = None,
        trace_buffer: int = 5000,
        record: bool = True,
        limits: RunLimits | None = None,
    ) -> None:
        """`record=False` keeps no trace (no recent records, no `syncs` or `errors` for the
        report): for benchmarks. `limits`: this run's ceilings (default `DEFAULT_RUN_LIMITS`)."""
        self.scenario = scenario or Scenario()
        self.limits = limits or DEFAULT_RUN_LIMITS
        self.halted: str | None = None  # why the simulation stopped for good (a ceiling), if it did
        self.errors: list[Obj] = []  # `error` trace records (see the module docstring)
        self.errors_dropped = 0
        self.seed = self.scenario.seed if seed is None else seed
        self.config: dict[str, Any] = copy.deepcopy(self.scenario.config)
        self.kernel = Kernel(self.seed)
        self.kernel.event_limit = self.limits.events
        self.trace = Trace(self.kernel)
        self.record_log: RecordLog | None = None  # keep_records
        self.recent: deque[Record] = deque(maxlen=trace_buffer)
        self.history = RunHistory()
        self.syncs: list[Obj] = self.history.syncs
        self.actions: list[Obj] = []
        if record:
            self.trace.subscribe(self._record)
        self.server = APIServer(self.kernel, self.trace)
        self.server.max_pods = self.limits.pods
        self.server.event_ttl = int(self.config["eventTTL"])  # --event-ttl, cut to whole seconds
        self.clients: dict[str, Client] = {}
        registry = REGISTRY.in_world(self.config["controllers"])
        self.owner_kinds = registry.kinds()
        self.report_kinds = (*self.owner_kinds, "Pod", "Node", "Event")
        self.gc = GarbageCollector(
            self.server,
            self.kernel,
            self._client("garbage-collector"),
            self.trace,
            delay=self.config["watchLatency"],
            resources=registry.managed_resources(),
        )
        self.nodes = NodeSimulator(self.server, self.kernel, self.trace, self._node_config())
        self.namespaces = NamespaceController(
            self.kernel, self._client("namespace-controller"), self.trace, delay=self.config["watchLatency"]
        )
        self.controllers: dict[str, ReplicaSetController | ReplicationManager] = {}
        for name in self.config["controllers"]:
            self.controllers[name] = self._new_controller(name)
        self.faults = FaultInjector(self)
        # The user's operators (`operators:`), each on its own asyncio loop (controlplane.operators).
        self.operators: Any = None
        if self.scenario.operators:
            self.operators = OPERATOR.host_class()(
                self.kernel,
                self.scenario.operators,
                seed=self.seed,
                client=self._client,
                watch_latency=self.config["watchLatency"],
                report_error=self._error,
                trace=self.trace,
            )
        self.started = False
        # The HTTP answer to the last `request` action: (code, object / List / Status).
        self.last_response: tuple[int, Obj] | None = None
        self.last_warnings: list[str] = []  # the Warning headers of the last `request` action's answer
        self._timeline_pending: set[int] = set()  # indexes of the file's actions not yet applied
        self._timeline_logged: set[int] = set()  # indexes in `actions` of the file's own actions
        # What a replay of this session would check (`check_replayable`), kept from the start:
        # the pods its file asks for (the timeline's and the live actions logged) and what the
        # actions logged so far have configured (nodes, apiFault rules).
        self._replay_pods = PodDemand()
        self._replay_timeline = TimelineCheck(self.scenario.config)

    @classmethod
    def from_file(cls, name_or_path: str, *, seed: int | None = None, limits: RunLimits | None = None) -> Simulation:
        return cls(load_file(name_or_path), seed=seed, limits=limits)

    # -- wiring -----------------------------------------------------------------------------
    def _client(self, user_agent: str) -> Client:
        client = self.clients.get(user_agent)
        if client is None:
            qps = self.config["kubeApiQPS"]
            client = Client(
                self.server,
                self.kernel,
                user_agent,
                qps=None if qps < 0 else (qps or 5.0),
                burst=self.config["kubeApiBurst"],
                latency=self.config["apiLatency"],
            )
            self.clients[user_agent] = client
        return client

    def _new_controller(self, name: str) -> ReplicaSetController | ReplicationManager:
        """The controller `name` of the version config.controllerVersion names, with the flags
        of that version (kube-controller-manager's, docs/versions.md)."""
        spec = by_name(name)
        client = self._client(spec.component)
        version = spec.version(self.config["controllerVersion"][name])
        controller: ReplicaSetController | ReplicationManager = version.new(
            self.kernel, client, self._controller_config(name), trace=self.trace, flags=self.config
        )
        return controller

    def _controller_flags_changed(self, name: str, controller: ReplicaSetController | ReplicationManager) -> bool:
        """Whether the running controller `name` was built with other flags than the config
        now asks for: another version, or (for a ReplicationManager) another GC flag or
        lookup cache size."""
        if controller.version != self.config["controllerVersion"][name]:
            return True
        if isinstance(controller, ReplicationManager):
            wanted = (bool(self.config["enableGarbageCollector"]), int(self.config["lookupCacheSize"]))
            return (controller.garbage_collector_enabled, controller.lookup_cache_size) != wanted
        return False

    def _replace_controller(self, name: str) -> None:
        """A kube-controller-manager restart with a new binary or new flags: the running
        controller stops (caches, queue, expectations, lookup cache lost) and one of the
        configured version starts and relists."""
        old = self.controllers[name]
        old.stop()
        new = self._new_controller(name)
        new.restarts = old.restarts + 1
        self.controllers[name] = new
        if self.trace.enabled:
            self.trace.emit(
                "controller.restart",
                controller=name,
                reason="config",
                previousVersion=old.version,
                version=new.version,
                garbageCollector=self.config["enableGarbageCollector"],
            )
        if self.started:
            new.start()

    def controller_version(self, name: str) -> str | None:
        """The version the running controller `name` implements (None if it does not run)."""
        controller = self.controllers.get(name)
        return None if controller is None else controller.version

    def _node_config(self) -> Obj:
        return {key: self.config[key] for key in NODE_CONFIG_KEYS}

    def _controller_config(self, name: str) -> ControllerConfig:
        cfg = self.config
        return ControllerConfig(
            workers=cfg["workers"],
            burst_replicas=cfg["burstReplicas"],
            watch_latency=cfg["watchLatency"],
            resync_period=cfg["resyncPeriod"],
            slow_start=cfg["whatIf"]["slowStart"],
            expectations=cfg["whatIf"]["expectations"],
            stale_controller_consistency=cfg["featureGates"]["StaleControllerConsistencyReplicaSet"],
            terminating_replicas=cfg["featureGates"]["DeploymentReplicaSetTerminatingReplicas"],
            pod_deletion_cost=cfg["featureGates"]["PodDeletionCost"],
            manual_workers=name in cfg["manualWorkers"],
        )

    def _record(self, record: Record) -> None:
        self.recent.append(record)
        if record["kind"] == "error":
            if len(self.errors) < MAX_ERRORS_KEPT:
                self.errors.append(record)
            else:
                self.errors_dropped += 1
        self.history.observe(record)

    # -- starting ---------------------------------------------------------------------------
    def start(self) -> None:
        """Apply the starting objects at t=0 (ScenarioError if the API server rejects one), start
        nodes, the garbage collector and the controllers, and schedule the timeline."""
        if self.started:
            return
        self.check_limits()
        for i, manifest in enumerate(self.scenario.objects):
            self._replay_pods.manifest(manifest, f"objects[{i}]")
        for action in self.scenario.actions:
            self._replay_pods.action(action)
        self.started = True
        for i, manifest in enumerate(self.scenario.objects):
            try:
                self._apply_manifest(manifest)
            except ApiError as exc:
                raise ScenarioError(f"objects[{i}]: {exc.message}") from None
        self.nodes.start()
        self.namespaces.start()
        if self.config["enableGarbageCollector"]:
            self.gc.start()
        for controller in self.controllers.values():
            controller.start()
        if self.operators is not None:
            self.operators.start()
        for i, action in enumerate(self.scenario.actions):
            self._timeline_pending.add(i)
            self.kernel.call_at_end_of_instant(float(action["at"]), self._apply_timeline, i)

    def close(self) -> None:
        """The world's end: its embedded operators stop (their shutdown runs on their own clock;
        nothing in the world moves). The report and the trace are as they were. Idempotent."""
        if self.operators is not None:
            self.operators.stop()

    def check_limits(self) -> None:
        """ScenarioError (naming the field) if the scenario asks for more pods or nodes than this
        run's ceilings; see `scenario.demand` for how pods are counted."""
        wanted = demand(self.scenario)
        if wanted.pods > self.limits.pods:
            raise LimitError(
                f"{wanted.pods_field}: the scenario asks for up to {wanted.pods} pods at once, more than this "
                f"run's ceiling of {self.limits.pods} (--max-pods)"
            )
        if wanted.nodes > self.limits.nodes:
            raise LimitError(
                f"{wanted.nodes_field}: {wanted.nodes} nodes is more than this run's ceiling of "
                f"{self.limits.nodes} (--max-nodes)"
            )

    # -- errors and ceilings ----------------------------------------------------------------
    def _error(self, where: str, exc: BaseException | str, **fields: Any) -> str:
        """Report something that raised (or a ceiling reached) as an `error` record."""
        text = exc if isinstance(exc, str) else _error_text(exc)
        if self.trace.enabled:
            self.trace.emit("error", where=where, error=text, **fields)
        return text

    def _contained(self, run: Callable[[], Any], *, once: bool = False, ceiling: bool = True) -> None:
        """Run kernel work; an exception escaping a callback is reported and the work goes on
        (the failed callback has run; with `once`, it was the work). Then check the ceiling
        (unless `ceiling` is False: the kernel's limit was lowered for this run only)."""
        while True:
            try:
                run()
            except Exception as exc:
                fields: Obj = {}
                failures = self.kernel.failures
                if failures and failures[-1][1] is exc:
                    fields["task"] = failures[-1][0].name
                self._error("kernel", exc, **fields)
                if not once:
                    continue
            break
        if ceiling and self.kernel.limit_reached and self.halted is None:
            self.halted = (
                f"halted at t={self.kernel.now:.3f} s: {self.kernel.events} kernel events ran, the ceiling of "
                f"{self.limits.events} for one run (--max-events)"
            )
            self._error("limit", self.halted)

    # -- actions ----------------------------------------------------------------------------
    def apply(self, action: Obj, source: str | None = None) -> Obj:
        """Apply one action (`{verb: body}`, an `at` key is ignored) right now, wherever the
        kernel is (a scenario's timeline calls it at the end of the action's instant; live
        callers use `act`). Returns {"ok": bool, ...}. A malformed action is refused without
        entering the action log (it never happened); one the world rejects (an API error, a pod
        that does not exist) is logged with its error, as it replays identically. `source` (who
        acted: "scenario", "user", a kubectl user agent ...) is kept in the log entry."""
        problem = self.check_action(action)
        if problem is not None:
            if self.trace.enabled:
                self.trace.emit("action", action=action, ok=False, error=problem)
            return {"ok": False, "error": problem}
        verb = next(k for k in action if k != "at")
        trace = self.trace
        if not trace.enabled:
            return self._apply(action, verb, source)
        # A root of the causes (controlplane.trace): everything the action does is caused by its
        # action.start record, written before it acts; the action record after it has the result.
        outer = trace.cause
        trace.begin("action.start", None, action={k: v for k, v in action.items() if k != "at"}, source=source)
        try:
            return self._apply(action, verb, source)
        finally:
            trace.cause = outer

    def _apply(self, action: Obj, verb: str, source: str | None) -> Obj:
        try:
            result = getattr(self, f"_do_{verb}")(action[verb])
        except ApiError as exc:
            failure: Obj = {"ok": False, "error": exc.message, "code": exc.code, "reason": exc.reason}
            causes = (exc.details or {}).get("causes")
            if causes:
                failure["causes"] = causes
            logged = self._done(action, failure, source)
            if verb == "request":
                return {**logged, "response": (exc.code, exc.status())}
            return logged
        except Exception as exc:  # a bug, or input no check foresaw: the session goes on
            text = self._error("action", exc, action=action)
            return self._done(action, {"ok": False, "error": f"internal error: {text}"}, source)
        logged = self._done(action, {"ok": "error" not in result, **result}, source)
        if verb == "request":
            if self.last_warnings:
                return {**logged, "response": self.last_response, "warnings": self.last_warnings}
            return {**logged, "response": self.last_response}
        return logged

    def _apply_timeline(self, index: int) -> None:
        self._timeline_pending.discard(index)
        logged = len(self.actions)
        self.apply(self.scenario.actions[index], "scenario")
        if len(self.actions) > logged:
            self._timeline_logged.add(logged)

    @staticmethod
    def check_action(action: Any) -> str | None:
        """None for a well-formed action, else the one-line reason (`scale.replicas: must be >= 0`)."""
        if not isinstance(action, dict):
            return "an action must be a mapping of one verb to its body"
        verbs = [k for k in action if k != "at"]
        if len(verbs) != 1:
            return "an action needs exactly one verb"
        verb = verbs[0]
        if verb not in ACTION_VERBS:
            return f"{verb}: unknown verb (one of {', '.join(ACTION_VERBS)})"
        try:
            check_verb(verb, action[verb], verb)
        except ScenarioError as exc:
            return str(exc)
        try:
            # An action is JSON: finite numbers, string keys, bounded nesting and size. What is
            # not could not be logged, traced to a browser or exported as a scenario.
            decode.check_json(action[verb], "action")
        except ApiError as exc:
            message = exc.message.removeprefix("invalid action: ")
            causes = (exc.details or {}).get("causes") or [{"field": "", "message": message}]
            where = f"{verb}.{causes[0]['field']}" if causes[0]["field"] else verb
            return f"{where}: {causes[0]['message']}"
        return None

    def act(self, action: Obj, source: str = "user") -> Obj:
        """Apply `action` live at the current virtual time, at the point a scenario file's action
        with this `at` is applied: once every event due at this instant has run (so the events
        left of this instant run first). A malformed action changes nothing, not even time; nor
        does one the session's replay would refuse (`check_replayable`)."""
        problem = self.check_action(action)
        if problem is not None:
            return self.apply(action, source)
        self.start()
        if self.halted is not None:
            return {"ok": False, "error": self.halted}
        problem = self.check_replayable(action)
        if problem is not None:
            return {"ok": False, "error": problem}
        box: list[Obj] = []
        logged = len(self.actions)
        self.kernel.call_at_end_of_instant(self.kernel.now, lambda: box.append(self.apply(action, source)))
        now = self.kernel.now
        self._contained(lambda: self.kernel.run_until(now))
        if len(self.actions) > logged:
            self._replay_pods.action(action)
        if not box:  # the event ceiling was reached before the action's turn
            return {"ok": False, "error": self.halted or "the action was not applied"}
        return box[0]

    def check_replayable(self, action: Obj) -> str | None:
        """None when this session, with the well-formed `action` taken now, still replays; else
        the one-line reason. A session replays as its cut (`export_scenario`, `cut_scenario`): a
        scenario file whose timeline is the action log and the file's actions still to come,
        checked like any file (`_check_timeline`) and against this run's ceilings
        (`check_limits`: the same `RunLimits`) before it runs. So what a restore, a re-open, a
        fork or `report.json?at=` would refuse is refused here, when it is taken, and logged
        nowhere -- a ReplicaSet scaled past the pod ceiling, say, where the pods themselves
        would only have met the quota (`APIServer.max_pods`). `request` actions (the Kubernetes
        API) are the API server's to judge, live and replayed alike, as upstream's."""
        verb = next(k for k in action if k != "at")
        body = action[verb]
        if verb in TimelineCheck.VERBS:
            timeline = self._replay_timeline.copy()
            for i in self._timeline_pending:  # the file's actions of this instant come first
                if float(self.scenario.actions[i]["at"]) <= self.kernel.now:
                    timeline.note(self.scenario.actions[i])
            try:
                timeline.check(action)
            except ScenarioError as exc:
                return str(exc)
        asks = self._replay_pods.asks(action)
        total = 0 if asks is None else self._replay_pods.total_with(asks)
        if asks is not None and total > self.limits.pods:
            return (
                f"{asks[2]}: the session would then ask for up to {total} pods at once, more than this run's "
                f"ceiling of {self.limits.pods} (--max-pods); a scenario file asking for as many is refused, so is "
                "this (each ReplicaSet and ReplicationController counts at the largest replicas it is ever given)"
            )
        if verb == "config" and body.get("nodes", 0) > self.limits.nodes:
            ceiling = self.limits.nodes
            return f"config.nodes: {body['nodes']} nodes is more than this run's ceiling of {ceiling} (--max-nodes)"
        if len(self.actions) + len(self._timeline_pending) >= MAX_ACTIONS:
            return (
                f"the session's scenario file would list more than {MAX_ACTIONS} actions (its log and its "
                "timeline still to come), the most a file may: export it and start a new session from it"
            )
        return None

    def finish_instant(self) -> None:
        """Run every event left at the current instant (after a `step`, some may be)."""
        self.start()
        now = self.kernel.now
        self._contained(lambda: self.kernel.run_until(now))

    @property
    def timeline_pending(self) -> list[int]:
        """Indexes of the scenario's timeline actions not applied yet, in the order they will be."""
        timeline = self.scenario.actions
        return sorted(self._timeline_pending, key=lambda i: (float(timeline[i]["at"]), i))

    def start_data(self) -> Obj:
        """How this session started, as scenario data: name, description, seed (this run's),
        the initial config, the starting objects and the file's timeline actions. With the
        action log and `timeline_pending` it is the whole session (`cut_scenario`)."""
        return {
            "name": self.scenario.name,
            "description": self.scenario.description,
            "seed": self.seed,
            "config": copy.deepcopy(self.scenario.config),
            "objects": copy.deepcopy(self.scenario.objects),
            "actions": copy.deepcopy(self.scenario.actions),
            **({"operators": copy.deepcopy(self.scenario.operators)} if self.scenario.operators else {}),
        }

    def export_scenario(self, at: float | None = None) -> Obj:
        """This session as scenario data (docs/scenarios.md): the starting objects, the initial config,
        the seed, every action applied so far with its `at` (in application order), then the
        file's actions still to come; `until` is now. Call `finish_instant` first: run headless,
        it then gives the report this simulation gives now, byte for byte.

        With `at` (0 <= at <= now, else ValueError naming `at`): the session cut at that virtual
        time (`cut_scenario`), which run headless to `at` gives the report this session gave
        at `at` (docs/time-travel.md)."""
        return cut_scenario(self.start_data(), self.actions, self.timeline_pending, self.past_time(at))

    def past_time(self, at: Any = None) -> float:
        """`at` as a virtual time of this session's past (None: now); ValueError naming `at`
        when it is not one (not a finite number, < 0, after now)."""
        now = self.kernel.now
        if at is None:
            return now
        if isinstance(at, bool) or not isinstance(at, int | float) or not math.isfinite(at):
            raise ValueError("at: must be a finite number of seconds")
        if at < 0:
            raise ValueError("at: must be >= 0")
        if vtime(at) > now:
            raise ValueError(f"at: must be <= now (t={now:.3f}): the future has not happened yet")
        return vtime(float(at))

    def recording(self, until: float | None = None) -> Obj:
        """What replays this session exactly, event for event (`controlplane.session.timetravel.replay`): the
        scenario as it was loaded (its own timeline included), the seed, and the actions taken
        live — not the timeline's — each `{time, source, action}`, in application order (with
        `until`, those taken by then: the session's past up to `until`). Unlike
        `export_scenario`, it keeps apart what the kernel knew in advance (the timeline, scheduled
        at start) from what it learnt when it happened, so a replay's pending timers match too."""
        scenario = self.scenario
        return {
            "scenario": {
                "name": scenario.name,
                "description": scenario.description,
                "seed": scenario.seed,
                "config": copy.deepcopy(scenario.config),
                "objects": copy.deepcopy(scenario.objects),
                "actions": copy.deepcopy(scenario.actions),
                "until": scenario.until,
            },
            "seed": self.seed,
            "actions": [
                {"time": entry["time"], "source": entry.get("source"), "action": copy.deepcopy(entry["action"])}
                for i, entry in enumerate(self.actions)
                if i not in self._timeline_logged and (until is None or entry["time"] <= until)
            ],
        }

    def _done(self, action: Obj, result: Obj, source: str | None) -> Obj:
        entry = {"time": self.kernel.now, "action": {k: v for k, v in action.items() if k != "at"}, **result}
        if source is not None:
            entry["source"] = source
        self.actions.append(entry)
        self._replay_timeline.note(entry["action"])  # what the next live action is checked against
        if self.trace.enabled:
            self.trace.emit("action", **{k: v for k, v in entry.items() if k != "time"})
        return result

    def _resource(self, kind: str) -> str:
        return KIND_RESOURCES[kind]

    def _apply_manifest(self, manifest: Obj) -> Obj:
        resource = self._resource(manifest["kind"])
        meta = manifest.get("metadata") or {}
        namespace = None if resource in CLUSTER_SCOPED else meta.get("namespace", "default")
        if namespace is not None and not isinstance(namespace, str):
            namespace = None  # the body's bad namespace is the API server's to refuse (400)
        manifest = self._with_owner_uids(manifest, namespace)
        try:
            decode.check_json(manifest)
        except ApiError:
            # Not JSON (too deep, too big, NaN ...): not safe to deep-copy. Sent as it is, for
            # the API server to refuse and log like any bad request.
            return dict(self.server.create(resource, namespace, manifest, client="user", field_validation="Strict"))
        name = meta.get("name")
        if name and isinstance(name, str) and (namespace is not None or resource in CLUSTER_SCOPED):
            try:
                current = self.server.get(resource, namespace, name, client="user")
            except ApiError as exc:
                if exc.code != 404:
                    raise
            else:
                body = copy.deepcopy(manifest)
                body["metadata"] = {**body["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}
                if namespace:
                    body["metadata"]["namespace"] = namespace
                return dict(
                    self.server.update(resource, namespace, name, body, client="user", field_validation="Strict")
                )
        body = copy.deepcopy(manifest)
        if namespace:
            body["metadata"] = {**body["metadata"], "namespace": namespace}
        return dict(self.server.create(resource, namespace, body, client="user", field_validation="Strict"))

    def _with_owner_uids(self, manifest: Obj, namespace: Any) -> Obj:
        """Owner references without a `uid` get the uid (and apiVersion) of the live object
        they name: a scenario cannot know uids, the API server assigns them. References to
        nothing are left as they are (the API server refuses an empty uid)."""
        refs = manifest["metadata"].get("ownerReferences")
        if not isinstance(refs, list) or not any(isinstance(ref, dict) and "uid" not in ref for ref in refs):
            return manifest
        filled: list[Any] = []
        for ref in refs:
            kind, name = (ref.get("kind"), ref.get("name")) if isinstance(ref, dict) else (None, None)
            resource = KIND_RESOURCES.get(kind) if isinstance(kind, str) else None
            if isinstance(ref, dict) and "uid" not in ref and resource is not None and isinstance(name, str):
                owner_ns = None if resource in CLUSTER_SCOPED else namespace
                owner = self.server.peek(resource, owner_ns if isinstance(owner_ns, str) else None, name)
                if owner is not None:
                    ref = {"apiVersion": owner["apiVersion"], **ref, "uid": owner["metadata"]["uid"]}
            filled.append(ref)
        return {**manifest, "metadata": {**manifest["metadata"], "ownerReferences": filled}}

    def _do_apply(self, manifest: Obj) -> Obj:
        obj = self._apply_manifest(manifest)
        return {"object": f"{obj['kind']}/{obj['metadata']['name']}"}

    def _do_delete(self, body: Obj) -> Obj:
        resource = self._resource(body["kind"])
        namespace = None if resource in CLUSTER_SCOPED else body.get("namespace", "default")
        self.server.delete(
            resource, namespace, body["name"], propagation_policy=body.get("propagationPolicy"), client="user"
        )
        return {}

    def _do_scale(self, body: Obj) -> Obj:
        resource = self._resource(body["kind"])
        namespace = body.get("namespace", "default")
        self.server.patch(
            resource,
            namespace,
            body["name"],
            {"spec": {"replicas": body["replicas"]}},
            patch_type="merge",
            subresource="scale",
            client="user",
        )
        return {}

    def _do_patch(self, body: Obj) -> Obj:
        resource = self._resource(body["kind"])
        namespace = None if resource in CLUSTER_SCOPED else body.get("namespace", "default")
        self.server.patch(resource, namespace, body["name"], body["patch"], patch_type="merge", client="user")
        return {}

    def _do_request(self, body: Obj) -> Obj:
        """One write exactly as an API client sent it (kubectl through the dashboard's Kubernetes
        API): replayed through the API server's `handle`, with the client's user agent."""
        req = request_of(body)
        self.last_response = None
        self.last_warnings = []
        answer = self.server.handle(req)
        code = int(self.server.requests[-1]["code"])
        self.last_response = (code, answer)
        self.last_warnings = req.warnings
        result: Obj = {"code": code}
        if isinstance(answer, dict) and isinstance(answer.get("metadata"), dict) and answer["metadata"].get("name"):
            result["object"] = f"{answer.get('kind')}/{answer['metadata']['name']}"
        return result

    def _do_podFault(self, body: Obj) -> Obj:
        return self.faults.pod_fault(body)

    def _do_nodeFault(self, body: Obj) -> Obj:
        return self.faults.node_fault(body)

    def _do_apiFault(self, body: Obj) -> Obj:
        return self.faults.api_fault(body)

    def _do_watchFault(self, body: Obj) -> Obj:
        return self.faults.watch_fault(body)

    def client_watch_faults(self, since: int = 0) -> list[Obj]:
        """The `watchFault {client: …}` entries applied so far, from the `since`-th on (each
        `{client, resource, fault}`, in order): what the host applies to external clients'
        watches (see `FaultInjector.client_watch_faults`)."""
        return [dict(entry) for entry in self.faults.client_watch_faults[since:]]

    def _do_controllerFault(self, body: Obj) -> Obj:
        return self.faults.controller_fault(body)

    def _do_liftFault(self, body: Obj) -> Obj:
        return self.faults.lift_fault(body)

    def _do_sync(self, body: Obj) -> Obj:
        controller = self.controllers.get(body["controller"])
        if controller is None:
            return {"error": f"controller {body['controller']} is not running in this simulation"}
        try:
            return controller.sync_next(body.get("key"))
        except ValueError as exc:
            return {"error": str(exc)}

    def _do_config(self, body: Obj) -> Obj:
        changes = check_config(body, "config", partial=True)
        nodes = changes.get("nodes")
        if nodes is not None:
            # Checked before anything changes: a refused config action changes nothing.
            current = max(len(self.nodes.kubelets), self.config["nodes"])
            if nodes < current:
                return {"error": f"config.nodes: cannot shrink from {current} to {nodes} at run time (only add nodes)"}
            if nodes > self.limits.nodes:
                return {"error": f"config.nodes: {nodes} nodes is more than this run's ceiling of {self.limits.nodes}"}
        try:
            check_config_versions(merge_config(self.config, changes))
        except ScenarioError as exc:
            return {"error": str(exc)}
        for key, value in changes.items():
            if key in ("featureGates", "whatIf", "controllerVersion"):
                self.config[key].update(value)
            else:
                self.config[key] = value
        self._reconfigure(changes)
        return {"config": changes}

    def _reconfigure(self, changes: Obj) -> None:
        cfg = self.config
        self.server.event_ttl = int(cfg["eventTTL"])  # Events written from now on
        for client in self.clients.values():
            qps = cfg["kubeApiQPS"]
            client.qps = None if qps < 0 else (qps or 5.0)
            client.burst = cfg["kubeApiBurst"]
            client.latency = cfg["apiLatency"]
        self.nodes.apply_config(self._node_config())
        if "enableGarbageCollector" in changes and self.started:
            if cfg["enableGarbageCollector"]:
                self.gc.start()
            else:
                self.gc.stop()
        for name, controller in list(self.controllers.items()):
            if self._controller_flags_changed(name, controller):
                self._replace_controller(name)  # built from the whole new config
                continue
            new = self._controller_config(name)
            controller.config.burst_replicas = new.burst_replicas
            controller.config.slow_start = new.slow_start
            controller.config.expectations = new.expectations
            controller.expectations.enabled = new.expectations
            controller.config.terminating_replicas = new.terminating_replicas
            controller.config.pod_deletion_cost = new.pod_deletion_cost
            controller.set_consistency_gate(new.stale_controller_consistency)
            if "watchLatency" in changes:
                controller.config.watch_latency = new.watch_latency
                for informer in controller.informers:
                    informer.reflector.set_watch_latency(new.watch_latency)
            if "workers" in changes:
                controller.set_workers(new.workers)
            if "resyncPeriod" in changes:
                controller.set_resync_period(new.resync_period)
            if new.manual_workers != controller.config.manual_workers:
                controller.set_manual_workers(new.manual_workers)

    # -- reads ------------------------------------------------------------------------------
    def container_log(self, namespace: str, name: str, container: str | None, previous: bool) -> ContainerLog:
        """The log of a container of pod `namespace/name` (`container` None: its only one; the
        instance before the current one when `previous`): what the kubelet did with it, read from
        the stored pod (`controlplane.containerlog`). A read: nothing is recorded or changed.
        Raises ApiError as kube-apiserver answers (404 for an unknown pod, 400 for the rest)."""
        pod = self.server.read(Request("kubectl", "get", "pods", None, namespace, name))
        return container_log(pod, container, previous, self.now)

    @property
    def operator_names(self) -> list[str]:
        """The names of the world's embedded kopf operators (each its module's file name without
        `.py`), in the scenario's order; their handler invocations are syncs of that name."""
        return [PurePath(str(spec["module"])).stem for spec in self.scenario.operators or ()]

    # -- time -------------------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.kernel.now

    @property
    def events(self) -> int:
        """Kernel events run so far (with `now`, where the world stands; see `position`)."""
        return self.kernel.events

    def step(self) -> bool:
        """Run exactly one kernel event (False when none is left, or the simulation halted)."""
        self.start()
        box: list[bool] = []
        self._contained(lambda: box.append(self.kernel.step()), once=True)
        return box[0] if box else True

    def step_stage(self, limit: int = 1_000_000) -> Record | None:
        """Run until the next sync stage record (start, a stage, or end); returns it."""
        self.start()
        return step_until(self, Target(STEPS["stage"]), limit)

    def step_sync(self, limit: int = 1_000_000) -> Record | None:
        """Run until the next sync completes; returns its `sync.end` record."""
        self.start()
        return step_until(self, Target(STEPS["sync"]), limit)

    def advance(self, seconds: float) -> None:
        self.start()
        target = self.kernel.now + seconds
        self._contained(lambda: self.kernel.run_until(target))

    def run_until(self, t: float) -> None:
        self.start()
        self._contained(lambda: self.kernel.run_until(t))

    def run_to_events(self, until: float, events: int) -> None:
        """`run_until(until)`, stopping as soon as `events` kernel events have run in all: the
        clock then stays at the time of the last event run, the state right after it (replay
        lands on exact positions this way, `controlplane.session.timetravel.replay`). The run's own ceiling holds."""
        self.start()
        kernel = self.kernel
        ceiling = kernel.event_limit
        kernel.event_limit = events if ceiling is None else min(events, ceiling)
        try:
            self._contained(lambda: kernel.run_until(until), ceiling=False)
        finally:
            kernel.event_limit = ceiling
        self._contained(lambda: None)  # the run's own ceiling, if this run reached it

    def position(self) -> Position:
        """Where this simulation is, exactly: kernel events run, the last trace record's `seq`,
        the clock. Cheap (three reads). A replay of this session reaches the same positions."""
        return Position(self.kernel.events, self.trace.seq, self.kernel.now)

    def settling(self) -> str | None:
        """Why the pods are not at rest yet ("12 pods starting or stopping on their nodes, 3 being
        scheduled"), or None when none is on its way anywhere: the world half of "idle" (a
        crash-looping or unschedulable pod counts as at rest)."""
        on_nodes, scheduling = self.nodes.settling()
        parts = []
        if on_nodes:
            plural = "s" if on_nodes != 1 else ""
            parts.append(f"{on_nodes} pod{plural} starting, becoming ready or stopping on their nodes")
        if scheduling:
            parts.append(f"{scheduling} pod{'s' if scheduling != 1 else ''} being scheduled")
        return ", ".join(parts) or None

    def next_timer(self) -> float | None:
        return self.kernel.peek()

    def run_until_predicate(
        self, predicate: Callable[[Simulation], bool], until: float, limit: int = 10_000_000
    ) -> bool:
        """Step until `predicate(self)` holds (True) or virtual time would pass `until` (False)."""
        self.start()
        for _ in range(limit):
            if predicate(self):
                return True
            nxt = self.kernel.peek()
            if nxt is None or nxt > until:
                self.run_until(until)
                return predicate(self)
            if not self.step():
                break
        return predicate(self)

    def upcoming(self, limit: int = 5) -> list[Obj]:
        """The next timers after now, earliest first, each `{time, what}` in words: a delayed
        requeue, a watch delivery, a kubelet step, a scenario action, an unfulfilled
        expectations record expiring (not a kernel timer: upstream checks expiry lazily, at the
        next sync of the key; the time shown is when it stops blocking). A pure read."""
        out: list[Obj] = [
            {"time": t, "what": self._describe_timer(fn, args)} for t, fn, args in self.kernel.upcoming(limit)
        ]
        now = self.kernel.now
        for name, controller in self.controllers.items():
            for key in controller.expectations.keys():  # noqa: SIM118 - not a dict
                record, _ = controller.expectations.get_expectations(key)
                if record is not None and not record.fulfilled():
                    expiry = record.timestamp + EXPECTATIONS_TIMEOUT
                    if expiry >= now:
                        out.append({"time": expiry, "what": f"{name} expectations of {key} expire (unfulfilled)"})
        out.sort(key=lambda timer: float(timer["time"]))
        return out[:limit]

    def next_event(self) -> Obj | None:
        """`{time, what}` of the next callback the kernel will run (it may be due now), or None:
        O(1), for a status line; `upcoming` lists the later ones."""
        entry = self.kernel.next_entry()
        if entry is None:
            return None
        return {"time": entry[0], "what": self._describe_timer(entry[1], entry[2])}

    def _describe_timer(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> str:
        owner = getattr(fn, "__self__", None)
        name = getattr(fn, "__name__", "")
        if isinstance(owner, DelayingQueue):
            waiting = owner.snapshot()["waiting"]
            head = waiting[0]["key"] if waiting else "?"
            return f"delayed requeue of {head} ({owner.name} queue)"
        if isinstance(owner, Kubelet) and args:
            action = getattr(args[0], "action", None)
            what = KUBELET_STEPS.get(getattr(action, "__name__", ""), "status sync")
            return f"kubelet on {owner.node_name}: {what} of pod {args[0].key}"
        if isinstance(fn, Task):  # a task resumed by the future it waited for
            return f"{fn.name} resumes"
        if isinstance(owner, Task) or (args and isinstance(args[0], Task)):
            task = owner if isinstance(owner, Task) else args[0]
            return f"{task.name} wakes up"
        if name == "_deliver" and args and isinstance(args[0], Request):
            req = args[0]
            target = "/".join(p for p in (req.namespace, req.name) if p)
            what = f"{req.resource}/{req.subresource}" if req.subresource else req.resource
            return f"API request of {req.client} reaches the server: {req.verb} {what} {target}".rstrip()
        if name == "_apply_timeline" and args:
            action = self.scenario.actions[args[0]]
            verb = next(k for k in action if k != "at")
            return f"scenario action: {verb}"
        words = {
            "_fire": "watch delivery",
            "_on_timeout": "watch timeout (re-watch)",
            "_grace_expired": "node monitor grace period ends",
            "_evictions_due": "pod evictions due",
            "_resync": "informer resync",
            "_add": "garbage collector retry",
            "_revoke": "Events' etcd lease expires (eventTTL): they are deleted",
        }
        what = words.get(name, name.strip("_").replace("_", " ") or repr(fn))
        label = getattr(owner, "name", None)
        return f"{what} ({label})" if isinstance(label, str) else what

    def subscribe(self, fn: Callable[[Record], None]) -> Callable[[], None]:
        return self.trace.subscribe(fn)

    # -- causes (controlplane.causes) ---------------------------------------------------------
    def keep_records(self, limit: int = MAX_RECORDS) -> RecordLog:
        """Keep every later trace record (compactly, at most `limit` with their fields) so that
        `why` and `records` can answer; idempotent. Call it before `start` to keep them all."""
        if self.record_log is None:
            self.record_log = RecordLog(limit)
            self.trace.subscribe(self.record_log)
        return self.record_log

    def why(self, seq: int) -> list[Obj]:
        """The chain of causes of trace record `seq`, newest first (`RecordLog.why`): each link
        `{seq, time, kind, text}`. ValueError when records are not kept or `seq` is not."""
        if self.record_log is None:
            raise ValueError("seq: this simulation keeps no trace records (keep_records)")
        return self.record_log.why(seq)

    def records(
        self, filters: dict[str, str] | None = None, offset: int = 0, limit: int = 200, upto: int | None = None
    ) -> Obj:
        """A page of the kept trace records matching `filters`, numbered at most `upto` when
        given (`RecordLog.records`)."""
        if self.record_log is None:
            return {"first": 0, "last": -1, "compactedBefore": 0, "upto": upto, "total": 0, "offset": 0, "rows": []}
        return self.record_log.records(filters, offset, limit, upto)

    # -- views ------------------------------------------------------------------------------
    def snapshot(self, recent: int = 200) -> Obj:
        server = self.server
        objects = {kind: [o for o in server.objects(KIND_RESOURCES[kind])] for kind in self.owner_kinds}
        return {
            "time": self.kernel.now,
            "seed": self.seed,
            "revision": server.revision,
            "config": copy.deepcopy(self.config),
            "controllers": {name: c.snapshot() for name, c in self.controllers.items()},
            "nodes": self.nodes.snapshot(),
            "owners": objects,
            "apiFaults": [rule.describe() for rule in self.faults.api_rules],
            "recent": list(self.recent)[-recent:],
            "pendingEvents": self.kernel.pending(),
        }

    @staticmethod
    def _expectation_counts(controller: ReplicaSetController | ReplicationManager) -> Obj:
        """Every key with a record, fulfilled or not (docs/scenarios.md)."""
        out: Obj = {}
        for key in controller.expectations.keys():  # noqa: SIM118 - not a dict
            record, _ = controller.expectations.get_expectations(key)
            if record is not None:
                out[key] = _counts(record)
        return out

    def report(self) -> Obj:
        server = self.server
        objects = {
            kind: [copy.deepcopy(o) for o in server.objects(KIND_RESOURCES[kind])] for kind in self.report_kinds
        }
        return self._report(objects)

    def report_json(self) -> str:
        """`json.dumps(self.report(), separators=(",", ":"))`, byte for byte, in one synchronous
        pass and without copying the stored objects: they are encoded where they are (the C
        encoder reads them; nothing of them is allocated but the text). For a server that answers
        report.json of a big world: no snapshot of small objects that outlives the call."""
        compact = (",", ":")
        kinds = ",".join(
            f"{json.dumps(kind)}:{json.dumps(list(self.server.objects(KIND_RESOURCES[kind])), separators=compact)}"
            for kind in self.report_kinds
        )
        shell = self._report({})
        parts = []
        for key, value in shell.items():
            text = "{" + kinds + "}" if key == "objects" else json.dumps(value, separators=compact)
            parts.append(f"{json.dumps(key)}:{text}")
        return "{" + ",".join(parts) + "}"

    def diff_input(self) -> Obj:
        """What `diff_reports` reads of a report (time, apiCalls, the owners, Pods and Events,
        statusHistory), built without copying the stored objects: for a live comparison that
        refreshes often. Read it before the simulation moves on and never mutate it."""
        server = self.server
        indexed = sorted(enumerate(server.requests), key=lambda pair: (pair[1]["time"], pair[0]))
        keys = ("time", "client", "verb", "resource", "namespace", "name", "code")
        return {
            "time": self.kernel.now,
            "apiCalls": [{k: r[k] for k in keys} for _, r in indexed],
            "objects": {
                kind: list(server.objects(KIND_RESOURCES[kind])) for kind in (*self.owner_kinds, "Pod", "Event")
            },
            "statusHistory": self.history.status_history,
        }

    def _report(self, objects: Obj) -> Obj:
        server = self.server
        indexed = list(enumerate(server.requests))
        indexed.sort(key=lambda pair: (pair[1]["time"], pair[0]))
        api_calls = [
            {k: r[k] for k in ("time", "client", "verb", "resource", "namespace", "name", "code")} for _, r in indexed
        ]
        report = {
            "seed": self.seed,
            "time": self.kernel.now,
            "objects": objects,
            "apiCalls": api_calls,
            "syncs": list(self.syncs),
            "expectations": {name: self._expectation_counts(c) for name, c in self.controllers.items()},
            "queues": {
                name: {"depth": c.queue.metrics.depth, "adds": c.queue.metrics.adds, "retries": c.queue.metrics.retries}
                for name, c in self.controllers.items()
            },
            **self._report_additions(),
        }
        if self.errors:  # only when something was contained: a clean run's report is unchanged
            report["errors"] = [dict(record) for record in self.errors]
        return report

    def _report_additions(self) -> Obj:
        """The report's sections beyond the first seven (docs/scenarios.md, "The report")."""
        return {
            "statusHistory": copy.deepcopy(self.history.status_history),
            "metrics": {name: _json_safe_metrics(c.metrics.snapshot()) for name, c in self.controllers.items()},
            "nodes": [node["metadata"]["name"] for node in self.server.objects("nodes")],
            # Without `source`: who acted is the door, not the world, and a live session must
            # replay from its exported scenario file to the identical report.
            "actions": [{k: copy.deepcopy(v) for k, v in entry.items() if k != "source"} for entry in self.actions],
        }


def configured(scenario: Scenario, block: Obj) -> Scenario:
    """`scenario` with `block` (a `config` action's body, e.g. `{controllerVersion:
    {replicationcontroller: v1.5}, enableGarbageCollector: false}`) merged over its config before
    it starts. Checked as a `config` action is (`check_config`, then what the merged config must
    say as a whole); ScenarioError naming the field otherwise. The scenario's checks are kept."""
    changes = check_config(block, "config", partial=True)
    merged = merge_config(scenario.config, changes)
    check_config_versions(merged)
    return dataclasses.replace(scenario, config=merged)


def cut_scenario(start: Obj, entries: Sequence[Obj], pending: Iterable[int], at: float) -> Obj:
    """A recorded session cut at virtual time `at`, as scenario data (docs/time-travel.md).

    `start` is the session's `start_data()`; `entries` its action log (`Simulation.actions`:
    `time`, `action`, ...) up to some moment L >= `at`; `pending` the indexes of `start`'s timeline
    actions not applied by L. The cut holds the entries with `time <= at`, as timeline actions at
    their time and in the order they were applied, then every timeline action of `start` not
    applied by `at` (those after `at`, and those still pending at L), in the order a run applies
    them; `until` is `at`. Run headless, it gives the report the session gave at `at`: an
    applied entry replays at its time, at the end of its instant, as `Simulation.act` applied
    it. A pure function: nothing is run."""
    at = vtime(float(at))
    timeline: list[Obj] = start["actions"]
    waiting = set(pending)
    later = [i for i in range(len(timeline)) if i in waiting or float(timeline[i]["at"]) > at]
    later.sort(key=lambda i: (float(timeline[i]["at"]), i))
    actions: list[Obj] = [
        {"at": entry["time"], **copy.deepcopy(entry["action"])} for entry in entries if entry["time"] <= at
    ]
    actions += [copy.deepcopy(timeline[i]) for i in later]
    note = f"Exported from a ctrlscope session at t={at:.3f} s."
    return {
        "name": start["name"],
        "description": f"{start['description']} {note}".strip(),
        "seed": start["seed"],
        "config": copy.deepcopy(start["config"]),
        "objects": copy.deepcopy(start["objects"]),
        "actions": actions,
        **({"operators": copy.deepcopy(start["operators"])} if start.get("operators") else {}),
        "until": at,
    }


def recording_of(start: Obj, entries: Sequence[Obj], pending: Iterable[int]) -> Obj:
    """A recorded session as `Simulation.recording()` gives it — what a replay starts from (the
    one replay path, `controlplane.session.timetravel.replay`). `start`, `entries` and `pending` as
    for `cut_scenario` (the form a recording is stored in).

    The log holds the file's own timeline actions beside the live ones: the applied timeline
    actions (those not `pending`) are applied at their `at`, each before any live action of its
    instant, in the order a run applies them, and logged with their body; so an entry is the
    next of them when it has its time and its body, and a live action otherwise. (A live action
    with the body of a timeline action of its instant comes after it: the first such entry is
    the timeline's, which is the world's order too.) A pure function: nothing is run."""
    timeline: list[Obj] = start["actions"]
    waiting = set(pending)
    applied = sorted(
        (i for i in range(len(timeline)) if i not in waiting), key=lambda i: (vtime(float(timeline[i]["at"])), i)
    )
    k = 0
    live: list[Obj] = []
    for entry in entries:
        t = vtime(float(entry["time"]))
        while k < len(applied) and vtime(float(timeline[applied[k]]["at"])) < t:
            k += 1  # applied without a log entry (a file's actions are checked when it loads: never)
        if k < len(applied):
            expected = timeline[applied[k]]
            body = {a: v for a, v in expected.items() if a != "at"}
            if vtime(float(expected["at"])) == t and body == entry["action"]:
                k += 1
                continue
        live.append({"time": entry["time"], "source": entry.get("source"), "action": copy.deepcopy(entry["action"])})
    return {
        "scenario": {
            "name": start["name"],
            "description": start["description"],
            "seed": start["seed"],
            "config": copy.deepcopy(start["config"]),
            "objects": copy.deepcopy(start["objects"]),
            "actions": copy.deepcopy(timeline),
            **({"until": start["until"]} if "until" in start else {}),
        },
        "seed": start["seed"],
        "actions": live,
    }


def _counts(record: Any) -> Obj:
    add, dele = record.get_expectations()
    return {"add": add, "del": dele}


def _json_safe_metrics(snapshot: Obj) -> Obj:
    """Histogram bounds as Prometheus prints them: the last one is "+Inf", which JSON can carry
    (a float infinity would print as `Infinity`, which strict JSON parsers refuse)."""
    out = dict(snapshot)
    for name, value in snapshot.items():
        if isinstance(value, dict) and "buckets" in value:
            buckets = [["+Inf" if bound == float("inf") else bound, n] for bound, n in value["buckets"]]
            out[name] = {**value, "buckets": buckets}
    return out
