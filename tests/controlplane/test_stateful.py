"""A Hypothesis state machine over the action vocabulary (issue 9 §1.6): small worlds, any
sequence of scale, apply, patch, delete, pod/node/API/watch/controller faults and config
what-ifs, each applied live with `Simulation.act` and followed by some virtual time. The safety
oracles must hold after every step; once every fault is lifted and the quiet period has passed,
liveness must hold too. Hypothesis shrinks a failure to a minimal sequence of actions."""

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from controlplane.oracles import OracleReport, SafetyMonitor, check_liveness
from controlplane.scenario import POD_FAULTS, parse_scenario
from controlplane.simulation import Simulation
from controlplane.swarm import DEFAULT_QUIET, lift_actions
from tests.controlplane.factories import bare_pod, rc_manifest, rs_manifest

CONTROLLERS = [("ReplicaSet", "web"), ("ReplicationController", "legacy")]
APPS = ("web", "legacy")
RESYNC = 30.0


class ControllerActions(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        data = {
            "name": "stateful",
            "config": {"nodes": 2, "resyncPeriod": RESYNC},
            "objects": [rs_manifest("web", 2), rc_manifest("legacy", 1), bare_pod("stray")],
        }
        self.sim = Simulation(parse_scenario(data), trace_buffer=16)
        self.report = OracleReport()
        self.monitor = SafetyMonitor(self.sim, self.report)
        self.sim.start()
        self.applied: list[dict] = []

    def act(self, action: dict) -> None:
        self.applied.append(action)
        self.sim.act(action)

    @rule(owner=st.sampled_from(CONTROLLERS), replicas=st.integers(0, 6))
    def scale(self, owner, replicas):
        self.act({"scale": {"kind": owner[0], "name": owner[1], "replicas": replicas}})

    @rule(owner=st.sampled_from(CONTROLLERS), policy=st.sampled_from([None, "Background", "Foreground", "Orphan"]))
    def delete(self, owner, policy):
        body = {"kind": owner[0], "name": owner[1]}
        if policy:
            body["propagationPolicy"] = policy
        self.act({"delete": body})

    @rule(which=st.sampled_from(["web", "legacy"]), replicas=st.integers(0, 4))
    def apply(self, which, replicas):
        self.act({"apply": rs_manifest("web", replicas) if which == "web" else rc_manifest("legacy", replicas)})

    @rule(app=st.sampled_from((*APPS, "other")))
    def relabel_stray(self, app):
        self.act({"patch": {"kind": "Pod", "name": "stray", "patch": {"metadata": {"labels": {"app": app}}}}})

    @rule(app=st.sampled_from(APPS), fault=st.sampled_from(POD_FAULTS), count=st.integers(1, 2))
    def pod_fault(self, app, fault, count):
        self.act({"podFault": {"selector": f"app={app}", "fault": fault, "count": count}})

    @rule(node=st.sampled_from(["node-1", "node-2"]), fault=st.sampled_from(["down", "up"]))
    def node_fault(self, node, fault):
        self.act({"nodeFault": {"name": node, "fault": fault}})

    @rule(
        verb=st.sampled_from(["create", "delete", "patch", "update", "get", "*"]),
        resource=st.sampled_from(["pods", "replicasets/status", "replicationcontrollers/status", "replicasets", "*"]),
        code=st.sampled_from([409, 422, 429, 500, 403, 404]),
        count=st.integers(1, 5),
    )
    def api_fault(self, verb, resource, code, count):
        self.act({"apiFault": {"verb": verb, "resource": resource, "code": code, "count": count}})

    @rule(
        resource=st.sampled_from(["pods", "replicasets", "replicationcontrollers"]),
        fault=st.sampled_from(["pause", "resume", "drop"]),
    )
    def watch_fault(self, resource, fault):
        self.act({"watchFault": {"resource": resource, "fault": fault}})

    @rule(controller=st.sampled_from(["replicaset", "replicationcontroller"]))
    def restart(self, controller):
        self.act({"controllerFault": {"controller": controller, "fault": "restart"}})

    @rule(
        change=st.sampled_from(
            [
                {"whatIf": {"expectations": False}},
                {"whatIf": {"slowStart": False}},
                {"burstReplicas": 1},
                {"workers": 1},
                {"watchLatency": 2.0},
            ]
        )
    )
    def what_if(self, change):
        self.act({"config": change})

    @rule(seconds=st.sampled_from([0.01, 0.5, 3.0, 20.0]))
    def wait(self, seconds):
        self.sim.advance(seconds)

    @invariant()
    def safety_holds(self):
        self.monitor.flush()
        assert self.report.violations == [], [str(v) for v in self.report.violations]
        assert self.sim.errors == []  # nothing raised inside the simulation (it would be contained)

    @precondition(lambda self: len(self.applied) >= 3)
    @rule()
    def lift_everything_and_wait(self):
        chaos = [{"at": 0, **a} for a in self.applied]
        for action in lift_actions(chaos, {"nodes": 2, "resyncPeriod": RESYNC}, 0):
            self.sim.act({k: v for k, v in action.items() if k != "at"})
        self.applied = []
        self.sim.advance(DEFAULT_QUIET)
        self.monitor.flush()
        check_liveness(self.sim, self.report)
        assert self.report.violations == [], [str(v) for v in self.report.violations]

    def teardown(self):
        self.monitor.close()


ControllerActions.TestCase.settings = settings(
    max_examples=30,
    stateful_step_count=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
TestControllerActions = ControllerActions.TestCase
