"""Oracles: the promises the simulated controllers must keep, checked on a running `Simulation`
(read as a `controlplane.running.RunningWorld`; issue 9 §1.2). Written once, used by the tests,
the fault swarm and (later) the dashboard.

Three families:

* **Safety**, checked continuously and cheaply by a `SafetyMonitor` that listens to the trace
  (and reads the API server's event history as the trace announces each response):

  - `single-controller`: no pod ever has two ownerReferences with `controller: true`.
  - `expectations-gate`: a sync never issues a pod create or delete for a key whose expectations,
    as the trace's `expectations` records tell them, were unsatisfied and unexpired when the sync
    started (spec §6 step 5, §10). Voided while `whatIf.expectations` is false — over-creation is
    then the lesson, not a bug.
  - `burst`: no sync issues more than `burstReplicas` creates, nor more deletes (spec §8).
  - `slow-start`: a sync's create batches are 1, 2, 4, … (each `min(2 * previous, remaining)`),
    each batch really issued that many creates, and no batch follows a failed one (spec §8.1).
    Voided while `whatIf.slowStart` is false.
  - `status-from-listing`: the status counts a sync writes (replicas, fullyLabeledReplicas,
    readyReplicas, availableReplicas) are those of the pods that sync listed from its cache and
    claimed (spec §6 note, §11.1).
  - `resource-versions`: every committed object carries the revision it was committed at, and an
    object's resourceVersion only grows.
  - `announced-writes`: every pod create/delete a controller's client sends was announced by a
    `sync.request` record of a running sync (so the other oracles see every write).
  - `one-sync-per-key`: a key is never synced by two workers at once (the queue is stingy, §2.1).

* **Liveness (ESR)**, `check_liveness(sim, report, bound)`, at the end of the quiet period after
  every fault was lifted and again later: every live ReplicaSet/RC has exactly `spec.replicas`
  active owned pods (`esr-replicas`); its status matches the truth (`esr-status`); no orphan
  matching a live selector is left unadopted and no owned pod that stopped matching is left
  unreleased (`esr-ownership`); queues are empty, no worker busy, expectations satisfied, informer
  caches equal to the store (`esr-quiescent`). The bound (`liveness_bound`) has the resync period
  in it: two faithful upstream stalls end only at a resync (docs/scenarios.md, "Faithful stalls").

* **Determinism**: `TraceDigest` hashes every trace record; two runs of one scenario and seed
  must give equal digests (the swarm reruns a sample in a fresh interpreter).

Each oracle knows the what-ifs that void it and records the reason in `OracleReport.voided`
instead of failing. Oracles only read: they never emit trace records, never call methods with
side effects (e.g. `satisfied_expectations`, which traces an expiry), so a run watched by them is
the run a user gets.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from controlplane.controllers.registry import DEPLOYMENT, REGISTRY
from controlplane.deployment.util import (
    DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY,
    find_new_replica_set,
    has_revision_history_limit,
    is_rolling_update,
    max_surge,
    max_unavailable,
)
from controlplane.deployment.util import replicas as util_replicas
from controlplane.expectations import EXPECTATIONS_TIMEOUT
from controlplane.informers.store import NAMESPACE_INDEX, meta_namespace_key
from controlplane.labels import Selector, selector_from_set
from controlplane.podutil import controller_ref, is_pod_active, is_pod_available, is_pod_ready, is_pod_terminating
from controlplane.running import OracleVerdict, RunningWorld, register_oracle
from controlplane.trace import Record

if TYPE_CHECKING:
    from controlplane.replicaset import ReplicaSetController
    from controlplane.replication import ReplicationManager

Obj = dict[str, Any]

SAFETY = (
    "single-controller",
    "expectations-gate",
    "burst",
    "slow-start",
    "status-from-listing",
    "resource-versions",
    "announced-writes",
    "one-sync-per-key",
)
LIVENESS = ("esr-replicas", "esr-status", "esr-ownership", "esr-quiescent")
# The Deployment controller's promises (judged only in a world that runs it; see RolloutMonitor
# and _check_rollouts below).
ROLLOUT_SAFETY = ("rollout-surge", "rollout-unavailable", "rollout-hash-unique")
ROLLOUT_LIVENESS = ("rollout-complete", "rollout-history")
ORACLES = (*SAFETY, *LIVENESS, *ROLLOUT_SAFETY, *ROLLOUT_LIVENESS, "determinism", "no-crash")
MAX_VIOLATIONS_PER_ORACLE = 20
# What the oracles watch in the store: the controllers' children and their own objects, and nodes.
STORED = (*REGISTRY.managed_resources(), "nodes")
_ROLLOUT_RESOURCES = (DEPLOYMENT.resource, *(owned.resource for owned in DEPLOYMENT.owns))


@dataclass
class Violation:
    oracle: str
    object: str
    time: float
    message: str

    def as_dict(self) -> Obj:
        return {"oracle": self.oracle, "object": self.object, "time": self.time, "message": self.message}

    def __str__(self) -> str:
        return f"{self.oracle} {self.object} t={self.time:g}: {self.message}"


@dataclass
class OracleReport:
    """What the oracles found in one run: violations (at most `MAX_VIOLATIONS_PER_ORACLE` kept
    per oracle), the oracles that checked something, and the ones a what-if voided (why)."""

    violations: list[Violation] = field(default_factory=list)
    checked: set[str] = field(default_factory=set)
    voided: dict[str, str] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=dict)

    def violate(self, oracle: str, obj: str, time: float, message: str) -> None:
        self.checked.add(oracle)
        n = self._counts.get(oracle, 0) + 1
        self._counts[oracle] = n
        if n <= MAX_VIOLATIONS_PER_ORACLE:
            self.violations.append(Violation(oracle, obj, time, message))

    def check(self, oracle: str) -> None:
        self.checked.add(oracle)

    def void(self, oracle: str, reason: str) -> None:
        self.voided.setdefault(oracle, reason)

    def by_oracle(self) -> dict[str, int]:
        return dict(self._counts)


# -- safety -------------------------------------------------------------------------------------


@dataclass
class _Sync:
    """One running sync as the trace shows it."""

    key: str
    start: float
    satisfied: bool
    gate_on: bool
    burst: int
    slow_start: bool
    expectations: tuple[int, int, float] | None = None
    creates: int = 0
    deletes: int = 0
    reported: set[str] = field(default_factory=set)
    # slow start
    manage_n: int | None = None
    next_batch: int = 0
    remaining: int = 0
    batched: int = 0
    stopped: bool = False
    # status-from-listing
    rs: Obj | None = None
    owned: list[Obj] = field(default_factory=list)
    orphans: dict[str, Obj] = field(default_factory=dict)
    counted: list[Obj] | None = None
    listed_at: float = 0.0


class SafetyMonitor:
    """Subscribes to `sim.trace` and checks the safety oracles as records arrive. Call `flush()`
    before reading the report at a checkpoint (it scans the store's events committed since the
    last response), `close()` to stop listening."""

    def __init__(self, sim: RunningWorld, report: OracleReport) -> None:
        self.sim = sim
        self.report = report
        # controller name -> key -> (add, del, timestamp): the expectations as the trace tells them.
        self._expectations: dict[str, dict[str, tuple[int, int, float]]] = {}
        self._syncs: dict[tuple[str, str], _Sync] = {}
        self._announced: dict[str, int] = {}
        self._sent: dict[str, int] = {}
        self._components = {c.kind.component: name for name, c in sim.controllers.items()}
        # The pod-write oracles (expectations-gate, burst, slow-start, status-from-listing,
        # announced-writes) judge the controllers that own pods; the Deployment controller's
        # sync.request records are ReplicaSet writes (RolloutMonitor judges those).
        self._pod_owners = {spec.name for spec in REGISTRY.specs if any(o.resource == "pods" for o in spec.owns)}
        self._revision = sim.server.revision
        self._versions: dict[str, int] = {}  # uid -> last resourceVersion seen
        self._rollouts = RolloutMonitor(sim, report) if _rollout_spec(sim) is not None else None
        self._unsubscribe = sim.trace.subscribe(self._on_record)
        self._handlers = {
            "expectations": self._on_expectations,
            "controller.restart": self._on_restart,
            "sync.start": self._on_sync_start,
            "sync.stage": self._on_stage,
            "sync.request": self._on_request,
            "sync.end": self._on_sync_end,
            "api.request": self._on_api_request,
            "api.response": self._on_api_response,
        }
        if self._rollouts is not None:
            self._handlers["action.start"] = self._rollouts.on_action

    def close(self) -> None:
        self.flush()
        self._unsubscribe()

    def flush(self) -> None:
        """Scan the events committed since the last response, then check that every stored
        object still carries the resourceVersion it was committed with (nobody scribbled on it)."""
        self._scan_store()
        versions = self._versions
        for resource in STORED:
            for obj in self.sim.server.objects(resource):
                meta = obj["metadata"]
                committed = versions.get(meta.get("uid", ""))
                if committed is not None and meta.get("resourceVersion") != str(committed):
                    self.report.violate(
                        "resource-versions",
                        f"{resource} {meta.get('namespace') or ''}/{meta.get('name')}",
                        self.sim.now,
                        f"stored with resourceVersion {committed}, now carries {meta.get('resourceVersion')}",
                    )

    def _on_record(self, record: Record) -> None:
        handler = self._handlers.get(record["kind"])
        if handler is not None:
            handler(record)

    def _controller(self, name: str) -> ReplicaSetController | ReplicationManager | None:
        return self.sim.controllers.get(name)

    # -- expectations as the trace tells them ---------------------------------------------------
    def _on_expectations(self, r: Record) -> None:
        records = self._expectations.setdefault(r["controller"], {})
        op, key = r["op"], r["key"]
        if op in ("set", "expect_deletions"):
            records[key] = (r["add"], r["del"], r["time"])
        elif op == "delete":
            records.pop(key, None)
        elif op != "expired" and key in records:
            records[key] = (r["add"], r["del"], records[key][2])

    def _on_restart(self, r: Record) -> None:
        name = r["controller"]
        self._expectations.pop(name, None)
        for sync_key in [k for k in self._syncs if k[0] == name]:
            del self._syncs[sync_key]  # cancelled with the old controller: no sync.end comes

    # -- syncs ------------------------------------------------------------------------------------
    def _on_sync_start(self, r: Record) -> None:
        name, key, now = r["controller"], r["key"], r["time"]
        controller = self._controller(name)
        if controller is None:
            return
        if (name, key) in self._syncs:
            self.report.violate(
                "one-sync-per-key", f"{name} {key}", now, "a second worker started syncing a key already being synced"
            )
        self.report.check("one-sync-per-key")
        burst, slow_start, gate_on = self._configured()
        sync = _Sync(key=key, start=now, satisfied=True, gate_on=gate_on, burst=burst, slow_start=slow_start)
        self._judge_expectations(sync, name, now)
        self._syncs[(name, key)] = sync

    def _judge_expectations(self, sync: _Sync, name: str, now: float) -> None:
        """Whether the sync may manage replicas, from the trace's account of the expectations:
        at its start, and again at its `expectations` stage (where upstream evaluates them, spec
        §6 step 5; other goroutines may have run in between)."""
        record = self._expectations.get(name, {}).get(sync.key)
        sync.expectations = record
        sync.satisfied = record is None or (record[0] <= 0 and record[1] <= 0) or now > record[2] + EXPECTATIONS_TIMEOUT

    def _configured(self) -> tuple[int, bool, bool]:
        """burstReplicas, whatIf.slowStart, whatIf.expectations as configured now: the user's
        settings, not the controller's copy of them (a broken controller may ignore those)."""
        cfg = self.sim.config
        return int(cfg["burstReplicas"]), bool(cfg["whatIf"]["slowStart"]), bool(cfg["whatIf"]["expectations"])

    def _on_sync_end(self, r: Record) -> None:
        sync = self._syncs.pop((r["controller"], r["key"]), None)
        if sync is None or sync.manage_n is None or not sync.slow_start:
            return
        if not sync.stopped and sync.batched != sync.manage_n:
            self._violate(
                sync,
                "slow-start",
                r,
                f"slow start ended after {sync.batched} of {sync.manage_n} creates without a failed batch",
            )
        if sync.creates != sync.batched:
            self._violate(sync, "slow-start", r, f"{sync.creates} creates issued, batches account for {sync.batched}")

    def _violate(self, sync: _Sync, oracle: str, r: Record, message: str) -> None:
        if oracle in sync.reported:
            return  # once per sync and oracle
        sync.reported.add(oracle)
        self.report.violate(oracle, f"{r['controller']} {sync.key}", r["time"], message)

    def _on_request(self, r: Record) -> None:
        name = r["controller"]
        if name not in self._pod_owners:
            return
        self._announced[name] = self._announced.get(name, 0) + 1
        sync = self._syncs.get((name, r["key"]))
        if sync is None:
            self.report.violate("announced-writes", f"{name} {r['key']}", r["time"], "a pod write outside any sync")
            return
        verb = r["verb"]
        if verb == "create":
            sync.creates += 1
        else:
            sync.deletes += 1
        if sync.gate_on:
            self.report.check("expectations-gate")
            if not sync.satisfied:
                add, dele, since = sync.expectations or (0, 0, 0.0)
                self._violate(
                    sync,
                    "expectations-gate",
                    r,
                    f"issued a pod {verb} while its expectations (add={add}, del={dele}, set at t={since:g}) "
                    "were unsatisfied and unexpired when the sync started",
                )
        else:
            self.report.void("expectations-gate", "whatIf.expectations=false: over-creation is the lesson, not a bug")
        self.report.check("burst")
        count = sync.creates if verb == "create" else sync.deletes
        if count > sync.burst:
            self._violate(sync, "burst", r, f"issued {count} pod {verb}s in one sync, burstReplicas is {sync.burst}")

    def _on_stage(self, r: Record) -> None:
        sync = self._syncs.get((r["controller"], r["key"]))
        if sync is None or r["controller"] not in self._pod_owners:
            return
        stage = r["stage"]
        if stage == "expectations":
            self._judge_expectations(sync, r["controller"], r["time"])
        elif stage == "list":
            self._listed(sync, r)
        elif stage == "claim":
            if sync.rs is not None:
                adopted = [sync.orphans[n] for n in r.get("adopted") or () if n in sync.orphans]
                sync.counted = sync.owned + adopted
        elif stage == "status":
            self._status(sync, r)
        elif stage == "manage":
            # burstReplicas and slowStart as they are when the sync decides (a `config` action
            # may have changed them since the sync started).
            sync.burst, sync.slow_start, _ = self._configured()
            if r.get("action") != "create":
                return
            if not sync.slow_start:
                self.report.void("slow-start", "whatIf.slowStart=false: all creates go out in one batch")
                return
            n = int(r["count"])
            sync.manage_n = n
            sync.remaining = n
            sync.next_batch = min(n, 1)
        elif stage == "batch" and sync.slow_start:
            self._batch(sync, r)

    def _batch(self, sync: _Sync, r: Record) -> None:
        self.report.check("slow-start")
        size = int(r["size"])
        if sync.manage_n is None:
            self._violate(sync, "slow-start", r, "a create batch with no create decision before it")
            return
        if sync.stopped:
            self._violate(sync, "slow-start", r, "a create batch after a batch that failed")
        elif size != sync.next_batch:
            self._violate(
                sync,
                "slow-start",
                r,
                f"batch of {size} where slow start allows {sync.next_batch} "
                f"({sync.batched} of {sync.manage_n} created so far: 1, 2, 4, … capped by what remains)",
            )
        sync.batched += size
        if sync.creates != sync.batched:
            self._violate(
                sync, "slow-start", r, f"batches so far claim {sync.batched} creates, the sync issued {sync.creates}"
            )
        sync.remaining -= size
        sync.next_batch = min(2 * size, sync.remaining)
        if r.get("failed"):
            sync.stopped = True

    # -- status-from-listing --------------------------------------------------------------------
    def _listed(self, sync: _Sync, r: Record) -> None:
        controller = self._controller(r["controller"])
        if controller is None:
            return
        namespace, name = sync.key.split("/", 1)
        rs = controller.rs_informer.indexer.get(namespace, name)
        if rs is None:
            return
        try:
            selector = controller.kind.selector(rs)
        except ValueError:
            return
        uid = rs["metadata"].get("uid")
        owned: list[Obj] = []
        orphans: dict[str, Obj] = {}
        for pod in controller.pod_informer.indexer.by_index(NAMESPACE_INDEX, namespace):
            if not is_pod_active(pod) or not selector.matches(pod["metadata"].get("labels")):
                continue
            ref = controller_ref(pod)
            if ref is None:
                orphans[pod["metadata"]["name"]] = pod
            elif ref.get("uid") == uid:
                owned.append(pod)
        sync.rs, sync.owned, sync.orphans, sync.counted, sync.listed_at = rs, owned, orphans, None, r["time"]

    def _status(self, sync: _Sync, r: Record) -> None:
        written = r.get("status")
        if sync.rs is None or sync.counted is None or written is None:
            return
        self.report.check("status-from-listing")
        rs, pods = sync.rs, sync.counted
        template = ((rs["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {}
        fully = selector_from_set(template)
        min_ready = rs["spec"].get("minReadySeconds", 0) or 0
        ready = [p for p in pods if is_pod_ready(p)]
        expected = {
            "replicas": len(pods),
            "fullyLabeledReplicas": sum(1 for p in pods if fully.matches(p["metadata"].get("labels"))),
            "readyReplicas": len(ready),
        }
        low = sum(1 for p in ready if is_pod_available(p, min_ready, sync.listed_at))
        high = sum(1 for p in ready if is_pod_available(p, min_ready, r["time"]))
        wrong = [f"{k} {written.get(k)} (listed pods give {v})" for k, v in expected.items() if written.get(k) != v]
        available = written.get("availableReplicas")
        if not isinstance(available, int) or not low <= available <= high:
            span = f"{low}" if low == high else f"{low}-{high}"
            wrong.append(f"availableReplicas {available} (listed pods give {span})")
        if wrong:
            self._violate(sync, "status-from-listing", r, "status written: " + ", ".join(wrong))

    # -- the client's pod writes ----------------------------------------------------------------
    def _on_api_request(self, r: Record) -> None:
        name = self._components.get(r["client"])
        if name is None or r["resource"] != "pods" or r["verb"] not in ("create", "delete"):
            return
        sent = self._sent[name] = self._sent.get(name, 0) + 1
        self.report.check("announced-writes")
        if sent > self._announced.get(name, 0):
            self.report.violate(
                "announced-writes",
                f"{name} pods",
                r["time"],
                f"pod {r['verb']} #{sent} sent by {r['client']} with only {self._announced.get(name, 0)} announced "
                "by sync.request records",
            )

    def _on_api_response(self, r: Record) -> None:
        self._scan_store()

    # -- the store's history --------------------------------------------------------------------
    def _scan_store(self) -> None:
        server = self.sim.server
        if server.revision < self._revision:
            self.report.violate(
                "resource-versions",
                "store",
                self.sim.now,
                f"revision went back from {self._revision} to {server.revision}",
            )
        if server.revision == self._revision:
            return
        now = self.sim.now
        versions = self._versions
        rollouts = False
        grown: dict[str, list[Obj]] = {}
        for rv, event_type, resource, obj, old in server.events_since(self._revision):
            if resource in _ROLLOUT_RESOURCES:
                rollouts = True
                if resource != DEPLOYMENT.resource and event_type != "DELETED":
                    ref = controller_ref(obj)
                    before = 0 if old is None else (old.get("spec") or {}).get("replicas", 1)
                    if ref is not None and (obj.get("spec") or {}).get("replicas", 1) > before:
                        grown.setdefault(ref.get("uid") or "", []).append(obj)
            meta = obj["metadata"]
            self.report.check("resource-versions")
            where = f"{resource} {meta.get('namespace') or ''}/{meta.get('name')}"
            stamped = meta.get("resourceVersion")
            if stamped != str(rv):
                self.report.violate(
                    "resource-versions", where, now, f"committed at revision {rv} but carries resourceVersion {stamped}"
                )
            uid = meta.get("uid", "")
            last = versions.get(uid)
            if last is not None and rv <= last:
                self.report.violate("resource-versions", where, now, f"resourceVersion went from {last} to {rv}")
            if event_type == "DELETED":
                versions.pop(uid, None)
            else:
                versions[uid] = rv
            if resource == "pods" and event_type != "DELETED":
                self.report.check("single-controller")
                owners = [ref for ref in meta.get("ownerReferences") or () if ref.get("controller") is True]
                if len(owners) > 1:
                    names = ", ".join(f"{o.get('kind')}/{o.get('name')}" for o in owners)
                    self.report.violate("single-controller", where, now, f"two controller owners: {names}")
        self._revision = server.revision
        if rollouts and self._rollouts is not None:
            self._rollouts.evaluate(grown)


# -- liveness (ESR) -----------------------------------------------------------------------------


def liveness_bound(config: Obj, lift_time: float, quiet: float) -> str:
    """The promise the liveness oracle checks, in words, with the resync period in it."""
    resync = float(config.get("resyncPeriod") or 0.0)
    need = EXPECTATIONS_TIMEOUT + resync
    resync_text = f"one resync period ({resync:g} s)" if resync > 0 else "no resync (resyncPeriod 0)"
    return (
        f"converged {quiet:g} s after every fault was lifted at t={lift_time:g}: the bound is the expectations "
        f"TTL ({EXPECTATIONS_TIMEOUT:g} s) + {resync_text} = {need:g} s, plus the back-offs and pod start-up "
        "the lift leaves behind"
    )


def faithful_stall_risk(sim: RunningWorld) -> str | None:
    """Why liveness cannot be promised without a resync, or None. With `resyncPeriod` 0, two
    faithful upstream stalls (docs/scenarios.md) can last forever: a 404 or 422 injected on a pod
    delete or an adoption/release patch is taken as "already gone"/"not ours" and nothing enqueues
    the key again; expectations leaked by a paused pod watch block until they expire, and then
    nothing enqueues the key again."""
    if float(sim.config.get("resyncPeriod") or 0.0) > 0:
        return None
    for action in sim.scenario.actions:
        fault = action.get("apiFault")
        if (
            fault is not None
            and fault.get("code") in (404, 422)
            and fault.get("verb") in ("delete", "patch", "*")
            and fault.get("resource") in ("pods", "*")
        ):
            return "resyncPeriod 0 with a 404/422 on pod deletes or patches: a faithful stall only a resync ends"
        watch = action.get("watchFault")
        if watch is not None and watch.get("resource") == "pods" and watch.get("fault") in ("pause", "drop"):
            return "resyncPeriod 0 with a paused pod watch: leaked expectations, a faithful stall only a resync ends"
    return None


def check_liveness(sim: RunningWorld, report: OracleReport, bound: str = "") -> None:
    """ESR at this instant (call it after the quiet period). Violations name the bound. Without
    a resync, a failure that a faithful upstream stall may explain voids the oracles instead."""
    risk = faithful_stall_risk(sim)
    if risk is None:
        _check_liveness(sim, report, bound)
        return
    trial = OracleReport()
    _check_liveness(sim, trial, bound)
    report.checked |= trial.checked
    for oracle, reason in trial.voided.items():
        report.void(oracle, reason)
    for oracle in {v.oracle for v in trial.violations}:
        report.void(oracle, risk)


def _check_liveness(sim: RunningWorld, report: OracleReport, bound: str) -> None:
    suffix = f" [{bound}]" if bound else ""
    now = sim.now
    server = sim.server
    pods_by_ns: dict[str, list[Obj]] = {}
    for pod in server.objects("pods"):
        pods_by_ns.setdefault(pod["metadata"]["namespace"], []).append(pod)
    live_selectors: list[tuple[str, str, Selector]] = []
    for name, controller in sim.controllers.items():
        kind = controller.kind
        rollout = controller.spec is DEPLOYMENT  # it owns ReplicaSets, not pods: judged by _check_rollouts
        if controller.config.manual_workers:
            for oracle in (*LIVENESS, *ROLLOUT_LIVENESS) if rollout else LIVENESS:
                report.void(oracle, f"manualWorkers includes {name}: nobody syncs unless told to")
            continue
        if rollout:
            _check_rollouts(sim, report, suffix)
            _check_quiescent(report, sim, name, controller, now, suffix)
            continue
        for rs in server.objects(kind.resource):
            meta = rs["metadata"]
            where = f"{kind.kind}/{meta['name']}"
            if meta.get("deletionTimestamp"):
                continue  # being deleted: the garbage collector's business, not the controller's
            try:
                selector = kind.selector(rs)
            except ValueError:
                continue
            lister = kind.lister_selector(rs)
            if lister is not None:
                live_selectors.append((meta["namespace"], where, lister))
            _check_controller(report, rs, where, selector, pods_by_ns.get(meta["namespace"], []), kind, now, suffix)
        _check_quiescent(report, sim, name, controller, now, suffix)
    for namespace, pods in pods_by_ns.items():
        for pod in pods:
            if controller_ref(pod) is not None or not is_pod_active(pod):
                continue
            pod_labels = pod["metadata"].get("labels")
            for ns, where, selector in live_selectors:
                if ns == namespace and selector.matches(pod_labels):
                    report.violate(
                        "esr-ownership",
                        f"Pod/{pod['metadata']['name']}",
                        now,
                        f"an orphan matching {where} was never adopted{suffix}",
                    )
                    break


def _check_controller(
    report: OracleReport,
    rs: Obj,
    where: str,
    selector: Selector,
    pods: list[Obj],
    kind: Any,
    now: float,
    suffix: str,
) -> None:
    for oracle in LIVENESS:
        report.check(oracle)
    meta, spec = rs["metadata"], rs["spec"]
    uid = meta["uid"]
    owned = [p for p in pods if (ref := controller_ref(p)) is not None and ref.get("uid") == uid]
    active = [p for p in owned if is_pod_active(p) and selector.matches(p["metadata"].get("labels"))]
    want = spec.get("replicas", 1)
    if len(active) != want:
        report.violate("esr-replicas", where, now, f"{len(active)} active owned pods, spec.replicas is {want}{suffix}")
    for pod in owned:
        if is_pod_active(pod) and not selector.matches(pod["metadata"].get("labels")):
            report.violate(
                "esr-ownership",
                f"Pod/{pod['metadata']['name']}",
                now,
                f"owned by {where} but no longer matches its selector, never released{suffix}",
            )
    template = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    fully = selector_from_set(template)
    min_ready = spec.get("minReadySeconds", 0) or 0
    truth: Obj = {
        "replicas": len(active),
        "fullyLabeledReplicas": sum(1 for p in active if fully.matches(p["metadata"].get("labels"))),
        "readyReplicas": sum(1 for p in active if is_pod_ready(p)),
        "availableReplicas": sum(1 for p in active if is_pod_available(p, min_ready, now)),
    }
    status = rs.get("status") or {}
    wrong = [f"{k} {status.get(k, 0)} (truth {v})" for k, v in truth.items() if (status.get(k) or 0) != v]
    if status.get("observedGeneration") != meta.get("generation"):
        wrong.append(f"observedGeneration {status.get('observedGeneration')} (generation {meta.get('generation')})")
    if any(c.get("type") == "ReplicaFailure" for c in status.get("conditions") or ()):
        wrong.append("a ReplicaFailure condition with no failure left")
    if "terminatingReplicas" in status:
        terminating = sum(1 for p in owned if is_pod_terminating(p) and selector.matches(p["metadata"].get("labels")))
        if status["terminatingReplicas"] != terminating:
            wrong.append(f"terminatingReplicas {status['terminatingReplicas']} (truth {terminating})")
    if wrong:
        report.violate("esr-status", where, now, "status " + ", ".join(wrong) + suffix)


def _check_quiescent(
    report: OracleReport,
    sim: RunningWorld,
    name: str,
    controller: ReplicaSetController | ReplicationManager,
    now: float,
    suffix: str,
) -> None:
    report.check("esr-quiescent")
    problems: list[str] = []
    queue = controller.queue.snapshot()
    if queue["queue"] or queue["processing"]:
        problems.append(f"queue holds {queue['queue']} and is processing {[p['key'] for p in queue['processing']]}")
    busy = [w.id for w in controller.workers if w.key is not None]
    if busy:
        problems.append(f"workers {busy} still busy")
    for key in controller.expectations.keys():  # noqa: SIM118 - not a dict
        snap = controller.expectations.snapshot(key)
        if snap is not None and not snap["fulfilled"] and not snap["expired"]:
            problems.append(f"expectations of {key} unsatisfied (add={snap['add']}, del={snap['del']})")
    for informer in controller.informers:
        if informer.reflector.paused:
            problems.append(f"informer {informer.name} still paused")
        cached = {meta_namespace_key(o): o["metadata"]["resourceVersion"] for o in informer.indexer.list()}
        truth = {meta_namespace_key(o): o["metadata"]["resourceVersion"] for o in sim.server.objects(informer.resource)}
        if cached != truth:
            stale = sorted(k for k in cached.keys() | truth.keys() if cached.get(k) != truth.get(k))
            problems.append(f"informer {informer.name} differs from the store on {stale[:5]}")
    if problems:
        report.violate("esr-quiescent", name, now, "; ".join(problems) + suffix)


# -- rollouts (the Deployment controller, issue 28 §4) --------------------------------------------
#
# Checked only in a world that runs the Deployment controller (`config.controllers` names it), so
# the worlds of the pod controllers' runs are judged as before. maxSurge/maxUnavailable are
# resolved with the controller's own util (ResolveFenceposts, D7), the promise being upstream's:
# about the controller's own actions on a quiet cluster.


def _rollout_spec(sim: RunningWorld) -> Any:
    """The registry's Deployment spec when the world runs that controller, else None."""
    return DEPLOYMENT if DEPLOYMENT.name in sim.controllers else None


def _replica_sets_of(d: Obj, replica_sets: list[Obj]) -> list[Obj]:
    """The live ReplicaSets whose ControllerRef is `d` (what the controller syncs from)."""
    uid = d["metadata"].get("uid")
    return [
        rs
        for rs in replica_sets
        if not rs["metadata"].get("deletionTimestamp")
        and (ref := controller_ref(rs)) is not None
        and ref.get("uid") == uid
    ]


def _scale_signature(d: Obj) -> tuple[Any, ...]:
    """What, when a user changes it, moves the fenceposts (spec.replicas, the strategy)."""
    spec = d.get("spec") or {}
    return (spec.get("replicas"), json.dumps(spec.get("strategy"), sort_keys=True))


def _where(d: Obj) -> str:
    return f"{DEPLOYMENT.kind}/{d['metadata'].get('namespace') or ''}/{d['metadata']['name']}"


class RolloutMonitor:
    """The rollout safety oracles, judged on the store each time a Deployment or ReplicaSet
    changes (`SafetyMonitor` drives it):

    * `rollout-surge`: a RollingUpdate Deployment's ReplicaSets never want more than
      `spec.replicas + maxSurge` pods in total (the sum of their `spec.replicas`, which is what
      reconcileNewReplicaSet bounds; their status lags the pods both ways). Judged when a
      ReplicaSet of it grows, and only if the controller's own caches show the excess too
      (`_seen_by_controller`: a stale cache faithfully over-surges).
    * `rollout-unavailable`: once a RollingUpdate Deployment has been available (the sum of its
      ReplicaSets' `status.availableReplicas` ≥ `spec.replicas - maxUnavailable`), that sum never
      drops below it again.
    * `rollout-hash-unique`: at most one live ReplicaSet per `pod-template-hash` per Deployment.

    When they are suspended: a user's write to a Deployment (scale, patch, apply, request) may
    move the fenceposts or leave more pods than the new bound (proportional scaling needs a sync,
    D8): both budget oracles stand down for that Deployment until the bound holds again.
    Any other action (a pod, node, API, watch or controller fault, a pod or ReplicaSet write, a
    config change) can take pods away or feed the controller stale counts: `rollout-unavailable`
    stands down for the rest of the run (recorded in `voided`), `rollout-surge` until it holds
    again."""

    ORACLES = ("rollout-surge", "rollout-unavailable", "rollout-hash-unique")
    QUIET_VERBS = ("sync", "liftFault")

    def __init__(self, sim: RunningWorld, report: OracleReport) -> None:
        self.sim = sim
        self.report = report
        self._signatures: dict[str, tuple[Any, ...]] = {}
        self._surge_armed: dict[str, bool] = {}
        self._available_armed: dict[str, bool] = {}
        self._disrupted: str | None = None
        self._hash_reported: set[tuple[str, str]] = set()

    def on_action(self, r: Record) -> None:
        action = r.get("action") or {}
        verb = next(iter(action), "")
        if verb in self.QUIET_VERBS:
            return
        body = action.get(verb)
        kind = (body or {}).get("kind") if isinstance(body, dict) else None
        self._surge_armed.clear()
        self._available_armed.clear()
        if verb in ("scale", "patch", "apply") and kind == DEPLOYMENT.kind:
            return  # a user's own Deployment write: re-armed once the bound holds again
        if self._disrupted is None:
            self._disrupted = f"a {verb} action at t={r['time']:g} may take pods away or leave counts stale"
            self.report.void("rollout-unavailable", self._disrupted)

    def evaluate(self, grown: dict[str, list[Obj]]) -> None:
        """Judge every Deployment now; `grown` maps a Deployment's uid to its ReplicaSets whose
        spec.replicas grew (or that were created) since the last evaluation."""
        server, now = self.sim.server, self.sim.now
        replica_sets = list(server.objects(DEPLOYMENT.owns[0].resource))
        for d in server.objects(DEPLOYMENT.resource):
            if d["metadata"].get("deletionTimestamp"):
                continue
            uid = d["metadata"]["uid"]
            signature = _scale_signature(d)
            if self._signatures.get(uid, signature) != signature:
                self._surge_armed.pop(uid, None)
                self._available_armed.pop(uid, None)
            self._signatures[uid] = signature
            owned = _replica_sets_of(d, replica_sets)
            self._hashes(d, owned, now)
            if is_rolling_update(d):
                self._budget(d, uid, owned, now, grown)

    def _hashes(self, d: Obj, owned: list[Obj], now: float) -> None:
        self.report.check("rollout-hash-unique")
        seen: dict[str, str] = {}
        for rs in owned:
            value = (rs["metadata"].get("labels") or {}).get(DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY)
            if value is None:
                continue
            name = rs["metadata"]["name"]
            if value in seen and (d["metadata"]["uid"], value) not in self._hash_reported:
                self._hash_reported.add((d["metadata"]["uid"], value))
                self.report.violate(
                    "rollout-hash-unique",
                    _where(d),
                    now,
                    f"two ReplicaSets with {DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY}={value}: {seen[value]} and {name}",
                )
            seen.setdefault(value, name)

    def _seen_by_controller(self, d: Obj, grown: list[Obj]) -> str | None:
        """Why the controller itself broke the budget, or None when it may not have: the sum as
        its informers showed it when it grew `grown` (the other ReplicaSets and the Deployment
        from its caches, the grown ones as written). Upstream's bound is on what the controller
        sees: with a cache behind the store (two template changes a few milliseconds apart, a
        paused or slow watch) it faithfully surges past the bound and scales back in later syncs."""
        # RunningWorld types its controllers as the pod controllers; this one is the Deployment
        # controller (its `d_informer` and `rs_informer`).
        controller: Any = self.sim.controllers.get(DEPLOYMENT.name)
        if controller is None:
            return None
        meta = d["metadata"]
        cached_d = controller.d_informer.indexer.get(meta["namespace"], meta["name"]) or d
        bound = util_replicas(cached_d) + max_surge(cached_d)
        written = {rs["metadata"]["uid"]: rs for rs in grown}
        view = {
            rs["metadata"]["uid"]: rs
            for rs in _replica_sets_of(d, controller.rs_informer.indexer.by_index(NAMESPACE_INDEX, meta["namespace"]))
        }
        view.update(written)
        total = sum(util_replicas(rs) for rs in view.values())
        if total <= bound:
            return None
        return f"in the controller's own view they want {total}, over its bound {bound}"

    def _budget(self, d: Obj, uid: str, owned: list[Obj], now: float, grown: dict[str, list[Obj]]) -> None:
        want = util_replicas(d)
        surge, unavailable = max_surge(d), max_unavailable(d)
        wanted = sum(util_replicas(rs) for rs in owned)
        bound = want + surge
        self.report.check("rollout-surge")
        if wanted <= bound:
            self._surge_armed[uid] = True
        elif self._surge_armed.get(uid) and uid in grown:
            seen = self._seen_by_controller(d, grown[uid])
            if seen is not None:
                self._surge_armed[uid] = False  # once per excursion
                names = ", ".join(f"{rs['metadata']['name']}={util_replicas(rs)}" for rs in owned)
                self.report.violate(
                    "rollout-surge",
                    _where(d),
                    now,
                    f"its ReplicaSets want {wanted} pods ({names}), spec.replicas {want} + maxSurge {surge} = {bound}; "
                    f"{seen}",
                )
        if self._disrupted is not None:
            return
        available = sum(int((rs.get("status") or {}).get("availableReplicas") or 0) for rs in owned)
        floor = want - unavailable
        self.report.check("rollout-unavailable")
        if available >= floor:
            self._available_armed[uid] = True
        elif self._available_armed.get(uid):
            self._available_armed[uid] = False  # once per excursion
            names = ", ".join(
                f"{rs['metadata']['name']}={(rs.get('status') or {}).get('availableReplicas') or 0}" for rs in owned
            )
            self.report.violate(
                "rollout-unavailable",
                _where(d),
                now,
                f"{available} available ({names}) after it had been available, "
                f"spec.replicas {want} - maxUnavailable {unavailable} = {floor}",
            )


def _check_rollouts(sim: RunningWorld, report: OracleReport, suffix: str) -> None:
    """Rollout liveness at this instant (part of `check_liveness` in a world running the
    Deployment controller):

    * `rollout-complete`: every live, unpaused Deployment has observedGeneration == generation,
      a status that is its ReplicaSets' (replicas, updatedReplicas, readyReplicas,
      availableReplicas as calculateStatus sums them), and is complete: updatedReplicas ==
      replicas == availableReplicas == spec.replicas, the old ReplicaSets at 0 (DeploymentComplete,
      D12.6). A paused Deployment is held to its observedGeneration and status only. When some
      active pod of its ReplicaSets is still not available, completeness is not the controller's to
      give (an image that never pulls, pods never Ready: the kubelet's, a stuck rollout is the
      lesson): only the status part is judged, and the reason is recorded.
    * `rollout-history`: a complete Deployment keeps at most `revisionHistoryLimit` old
      ReplicaSets (cleanupDeployment, D11, runs once the rollout is complete)."""
    server, now = sim.server, sim.now
    replica_sets = list(server.objects(DEPLOYMENT.owns[0].resource))
    pods_by_owner: dict[str, list[Obj]] = {}
    for pod in server.objects("pods"):
        ref = controller_ref(pod)
        if ref is not None and is_pod_active(pod):
            pods_by_owner.setdefault(ref.get("uid") or "", []).append(pod)
    for d in server.objects(DEPLOYMENT.resource):
        meta, spec = d["metadata"], d.get("spec") or {}
        if meta.get("deletionTimestamp"):
            continue
        where = _where(d)
        owned = _replica_sets_of(d, replica_sets)
        new_rs = find_new_replica_set(d, list(owned))
        new_uid = None if new_rs is None else new_rs["metadata"]["uid"]
        old = [rs for rs in owned if rs["metadata"]["uid"] != new_uid]
        status = d.get("status") or {}
        report.check("rollout-complete")
        wrong: list[str] = []
        if status.get("observedGeneration") != meta.get("generation"):
            wrong.append(f"observedGeneration {status.get('observedGeneration')} (generation {meta.get('generation')})")

        def total(field: str, rss: list[Obj]) -> int:
            return sum(int((rs.get("status") or {}).get(field) or 0) for rs in rss)

        truth = {
            "replicas": total("replicas", owned),
            "updatedReplicas": total("replicas", [new_rs] if new_rs is not None else []),
            "readyReplicas": total("readyReplicas", owned),
            "availableReplicas": total("availableReplicas", owned),
        }
        wrong += [
            f"{k} {status.get(k) or 0} (its ReplicaSets give {v})"
            for k, v in truth.items()
            if (status.get(k) or 0) != v
        ]
        want = util_replicas(d)
        min_ready = int(spec.get("minReadySeconds") or 0)
        pods = [p for rs in owned for p in pods_by_owner.get(rs["metadata"]["uid"], ())]
        unavailable = [p["metadata"]["name"] for p in pods if not is_pod_available(p, min_ready, now)]
        judged = not spec.get("paused") and not unavailable
        if spec.get("paused"):
            report.void("rollout-complete", f"{where} is paused: only its observedGeneration and status are judged")
        elif unavailable:
            report.void(
                "rollout-complete",
                f"{where} has pods that are not available ({', '.join(sorted(unavailable)[:3])}): the kubelet's, not "
                "the controller's; only its observedGeneration and status are judged",
            )
        if judged:
            if new_rs is None or util_replicas(new_rs) != want or truth["updatedReplicas"] != want:
                have = (
                    "no new ReplicaSet"
                    if new_rs is None
                    else f"new ReplicaSet {new_rs['metadata']['name']} at {util_replicas(new_rs)}"
                )
                wrong.append(f"not complete: {have}, spec.replicas {want}")
            busy = [f"{rs['metadata']['name']}={util_replicas(rs)}" for rs in old if util_replicas(rs) != 0]
            if busy:
                wrong.append(f"not complete: old ReplicaSets not at 0 ({', '.join(busy)})")
            if truth["availableReplicas"] != want:
                wrong.append(f"not complete: {truth['availableReplicas']} available, spec.replicas {want}")
        if wrong:
            report.violate("rollout-complete", where, now, "; ".join(wrong) + suffix)
        if judged and not wrong and has_revision_history_limit(d):
            report.check("rollout-history")
            limit = int(spec["revisionHistoryLimit"])
            if len(old) > limit:
                report.violate(
                    "rollout-history",
                    where,
                    now,
                    f"{len(old)} old ReplicaSets kept ({', '.join(sorted(rs['metadata']['name'] for rs in old))}), "
                    f"revisionHistoryLimit is {limit}{suffix}",
                )


# -- determinism --------------------------------------------------------------------------------


class TraceDigest:
    """A SHA-256 over every trace record (canonical JSON), from subscription on."""

    def __init__(self, sim: RunningWorld) -> None:
        self._hash = hashlib.sha256()
        self._unsubscribe = sim.trace.subscribe(self._on_record)

    def _on_record(self, record: Record) -> None:
        self._hash.update(json.dumps(record, sort_keys=True, separators=(",", ":"), default=_plain).encode())
        self._hash.update(b"\n")

    def hexdigest(self) -> str:
        return self._hash.hexdigest()

    def close(self) -> None:
        self._unsubscribe()


def _plain(value: Any) -> Any:
    # Records are plain data; a set or an exotic value must still hash the same in every process
    # (never via repr, which may carry an id()).
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    return type(value).__name__


def compare_digests(first: str | None, second: str | None) -> str | None:
    """None when two runs agree, else the determinism violation's message."""
    if first == second:
        return None
    return f"two runs of the same scenario and seed gave trace digests {first} and {second}"


# -- as `expect:` checks (controlplane/checks.py) -----------------------------------------------

_MONITORS: weakref.WeakKeyDictionary[RunningWorld, tuple[SafetyMonitor, OracleReport]] = weakref.WeakKeyDictionary()


class _SafetyCheck:
    """`{oracle: safety}`: every safety oracle, from the start of the run to the check's moment.
    The check runner calls `attach` before the simulation starts (the monitor must see every
    record); the verdict lists the first violations."""

    def attach(self, sim: RunningWorld) -> None:
        if sim not in _MONITORS:
            report = OracleReport()
            _MONITORS[sim] = (SafetyMonitor(sim, report), report)

    def __call__(self, sim: RunningWorld, args: Obj) -> OracleVerdict:
        wanted = "no safety violation"
        entry = _MONITORS.get(sim)
        if entry is None:
            return OracleVerdict(False, wanted, "the safety monitor was not attached before the run started")
        monitor, report = entry
        monitor.flush()
        bad = [str(v) for v in report.violations if v.oracle in SAFETY]
        return OracleVerdict(not bad, wanted, bad[:5] or "none")


def _esr_check(sim: RunningWorld, args: Obj) -> OracleVerdict:
    """`{at: T, oracle: esr}`: liveness (ESR) at T, after the faults were lifted and a quiet period."""
    report = OracleReport()
    check_liveness(sim, report)
    bad = [str(v) for v in report.violations]
    voided = [f"{k}: {v}" for k, v in sorted(report.voided.items())]
    return OracleVerdict(
        not bad, "converged (esr-replicas, esr-status, esr-ownership, esr-quiescent)", bad[:5] or voided or "converged"
    )


register_oracle("safety")(_SafetyCheck())
register_oracle("esr")(_esr_check)


# -- operators' own oracles ---------------------------------------------------------------------


def check_operator_oracles(sim: RunningWorld, report: OracleReport) -> None:
    """The oracles a world's operators declare in their modules (controlplane.operators.oracle),
    checked now against the store: each as `<operator>:<oracle name>`, each message it gives a
    violation; an oracle that raises is a violation of itself, naming the exception."""
    host = getattr(sim, "operators", None)
    if host is None:
        return
    from controlplane.operators.oracle import messages

    now = sim.now
    for operator, name, predicate in host.oracles():
        oracle = f"{operator}:{name}"
        report.check(oracle)
        where = f"operator/{operator}"
        try:
            kept, total = messages(predicate(host.store(sim.server)))
        except Exception as exc:
            text = str(exc).splitlines()[0] if str(exc) else ""
            report.violate(oracle, where, now, f"the oracle raised {type(exc).__name__}: {text[:300]}".rstrip(": "))
            continue
        for message in kept:
            report.violate(oracle, where, now, message)
        if total > len(kept):
            report.violate(oracle, where, now, f"… and {total - len(kept)} more")
