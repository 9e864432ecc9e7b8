"""Issue 28's user story, walked once in a real browser with the real kubectl: a person who knows
Deployments from real clusters creates one with kubectl, watches a rolling update in the
dashboard, steps one Deployment sync and reads it in upstream's words, makes the rollout stall
behind an image that cannot be pulled, asks why?, rolls it back, and goes back in time to the
moment it stalled. Each step asserts what that person sees, in upstream's names and with the
numbers the controller compares; kubectl and the page are asked the same questions and agree.

The server is the kubectl tests' (tests/kubectl/conftest.py: TLS, a kubeconfig per simulation);
the simulation is a fresh one, paused, whose scenario runs the Deployment controller. Virtual
time moves only when the page says so (run to t=, sync next), so every number is exact.
"""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Locator, Page, expect

from controlplane.session.timefmt import vtime
from tests.kubectl.conftest import KUBECTL, TOKEN, Kubectl, kubectl_env, server  # noqa: F401 - fixtures

from .conftest import PATIENCE_MS, shot
from .test_dashboard import click_tile, errors, pod_states, run_to, wait_pods  # noqa: F401 - errors is a fixture
from .test_rollout import DEPLOYMENT_GO
from .test_time_travel import view_at

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl is not installed")

STORY = {
    "name": "a Deployment's story",
    "seed": 28,
    "config": {"nodes": 2, "podStartup": 0.5, "controllers": ["replicaset", "deployment"]},
    "objects": [],
    "until": 3600,
}


def web_pods(page: Page) -> dict[str, str]:
    return {k: v for k, v in pod_states(page).items() if k.startswith("default/web-")}


def count(rollout: Locator, key: str) -> Locator:
    """A number of the rollout panel by its data-k (rollout/total, rollout/<rs>/available …)."""
    return rollout.locator(f"[data-k='{key}']")


def test_a_deployment_created_with_kubectl_rolled_stalled_explained_undone_and_revisited(
    page: Page,
    server,  # noqa: F811 - the kubectl tests' fixture
    kubectl_env,  # noqa: F811
    errors,  # noqa: F811
):
    sim = server.start(world=STORY, running=False)
    kubectl = Kubectl(server, sim, kubectl_env)
    try:
        page.goto(f"{server.url}/?token={TOKEN}")
        page.goto(f"{server.url}/sim/{sim}/")
        expect(page.locator("#st-conn")).to_have_text("live")

        # 1. The first thing people type at a cluster.
        out = kubectl("create", "deployment", "web", "--image=nginx:1.27", "--replicas=4")
        assert out.strip() == "deployment.apps/web created"

        # 2. The page shows it: the Deployment, its ReplicaSet beneath it, four pods Ready.
        run_to(page, 5)
        wait_pods(
            page, "Object.entries(s).filter(([k, v]) => k.startsWith('default/web-') && v === 'Ready').length === 4"
        )
        deployment = page.locator("#owners article[data-owner='Deployment/web']")
        expect(deployment).to_be_visible()
        [rs1] = kubectl("get", "rs", "-l", "app=web", "-o", "name").split()
        rs1 = rs1.split("/")[1]
        expect(page.locator(f"#owners article[data-owner='ReplicaSet/{rs1}']")).to_have_attribute(
            "data-parent", "Deployment/web"
        )
        deployment.locator("a.owner-name").click()
        rollout = page.locator("#rollout")
        expect(rollout).to_contain_text("Rollout default/web")
        expect(rollout).to_contain_text("revision 1")
        expect(rollout.locator(f"tr.new[data-rs='{rs1}']")).to_contain_text("nginx:1.27")
        expect(count(rollout, f"rollout/{rs1}/available")).to_have_text("4")
        # 4 replicas, the defaults 25% / 25%: maxSurge 1 (rounded up), maxUnavailable 1 (down).
        expect(rollout).to_contain_text("of at most 5 = 4 + maxSurge 1")
        expect(rollout).to_contain_text("at least 3 = 4 \u2212 maxUnavailable 1")
        expect(rollout).to_contain_text("Available=True MinimumReplicasAvailable")
        expect(rollout).to_contain_text("Progressing=True NewReplicaSetAvailable")
        table = kubectl("get", "deploy", "web").splitlines()
        assert table[1].split()[:4] == ["web", "4/4", "4", "4"], table

        # 3 and 4. The Deployment controller's workers to manual, a rolling update with kubectl,
        # and one Deployment sync stepped by hand.
        # (focusing the Deployment showed its controller's column: no tab to click)
        expect(page.locator("#controller-tabs button[data-controller=deployment]")).to_have_attribute(
            "aria-selected", "true"
        )
        page.click("#manual-deployment")
        expect(page.locator("#sync-next-deployment")).to_be_visible()
        assert (
            kubectl("set", "image", "deployment/web", "nginx=nginx:1.28").strip() == "deployment.apps/web image updated"
        )
        t = page.evaluate("() => window.ctrlscope.status.t")
        run_to(page, round(t + 0.2, 3))  # the informer's event reaches the queue
        expect(page.locator("#sync-next-deployment")).to_be_enabled()
        page.click("#sync-next-deployment")
        inspector = page.locator("[data-slot=inspector]")
        expect(inspector).to_contain_text("Sync of default/web")
        run_to(page, round(t + 0.5, 3))  # the sync's API calls take their virtual time
        expect(inspector).to_contain_text("Returned no error \u2192 handleErr: Forget, then Done.")
        expect(inspector).to_contain_text("calls syncDeployment")
        for words in ("getNewReplicaSet", "rolloutRolling", "reconcileNewReplicaSet", "reconcileOldReplicaSets"):
            expect(inspector).to_contain_text(words)
        expect(inspector.locator("a:text-is('rolloutRolling')")).to_have_attribute(
            "href",
            re.compile(
                re.escape(DEPLOYMENT_GO) + r"[0-9a-f]*/pkg/controller/deployment/deployment_controller\.go#L\d+"
            ),
        )
        # rolling.go is not in the pinned snapshot: its stages link to the call in syncDeployment
        # that leads to them (controlplane/controllers/stages.py).
        expect(inspector.locator("a:text-is('reconcileNewReplicaSet')")).to_have_attribute(
            "href", re.compile(re.escape(DEPLOYMENT_GO) + r"[0-9a-f]*/pkg/controller/deployment/\w+\.go#L\d+")
        )
        # That sync created revision 2's ReplicaSet and scaled it up to the surge (4 + 1 = 5: to 1),
        # then reconcileOldReplicaSets scaled the old one down by maxScaledDown = 5 - 3 - 1 = 1.
        expect(rollout).to_contain_text("revision 2")
        rs2 = rollout.locator("tr.new").get_attribute("data-rs")
        assert rs2 and rs2 != rs1
        expect(rollout.locator("tr.new")).to_contain_text("nginx:1.28")
        expect(count(rollout, f"rollout/{rs2}/desired")).to_have_text("1")
        expect(count(rollout, f"rollout/{rs1}/desired")).to_have_text("3")
        expect(count(rollout, "rollout/total")).to_have_text("4")
        expect(inspector).to_contain_text(
            f"create {rs2} (pod-template-hash {rs2.split('-')[1]}) at 1 replica, revision 2"
        )
        expect(inspector).to_contain_text(f"The create answered: {rs2} exists, revision 2.")
        expect(inspector).to_contain_text("maxScaledDown = all 5 \u2212 minAvailable 3 \u2212 new unavailable 1 = 1")
        expect(inspector).to_contain_text("4 available against minAvailable 3: scaled old ReplicaSets down by 1.")
        expect(inspector).not_to_contain_text('"stage":')
        # Back to the worker loops: the rolling update runs to its end.
        page.click("#workers-deployment button:text-is('automatic')")
        expect(page.locator("#manual-deployment")).to_be_visible()
        run_to(page, 12)
        expect(count(rollout, f"rollout/{rs2}/available")).to_have_text("4")
        expect(count(rollout, f"rollout/{rs1}/desired")).to_have_text("0")
        expect(rollout).to_contain_text("Progressing=True NewReplicaSetAvailable")
        # The Deployment's lane, its ReplicaSets' beneath it: revision 2, ScalingReplicaSet Events.
        page.wait_for_function("() => window.CtrlscopeTimeline.drawn().length >= 3")
        drawn = page.evaluate("() => window.CtrlscopeTimeline.drawn().map(l => l.owner)")
        assert drawn[0] == "Deployment/web" and {f"ReplicaSet/{rs1}", f"ReplicaSet/{rs2}"} <= set(drawn), drawn
        marks = page.evaluate("() => window.CtrlscopeTimeline.marks()")
        assert ["rev", "2"] in [m[2:4] for m in marks], marks
        assert any(m[3] == "ScalingReplicaSet" and f"Scaled up replica set {rs2}" in m[4] for m in marks), marks
        assert (
            kubectl("rollout", "status", "deployment/web").strip().endswith('deployment "web" successfully rolled out')
        )

        # 5. Make it stall: an image that cannot be pulled, a short progress deadline, a new image.
        form = rollout.locator("form[data-rollout=imageFault]")
        form.locator("input[name=glob]").fill("nginx:bad")
        form.locator("button[type=submit]").click()
        expect(page.locator("#faults")).to_contain_text("image fault: nginx:bad \u2192 ErrImagePull")
        kubectl("patch", "deployment", "web", "-p", '{"spec":{"progressDeadlineSeconds":10}}')
        kubectl("set", "image", "deployment/web", "nginx=nginx:bad")
        stall_from = page.evaluate("() => window.ctrlscope.status.t")
        run_to(page, round(stall_from + 1, 3))
        expect(rollout).to_contain_text("revision 3")
        rs3 = rollout.locator("tr.new").get_attribute("data-rs")
        expect(rollout.locator("tr.new")).to_contain_text("nginx:bad")
        expect(rollout.locator(".deadline")).to_contain_text("deadline in")
        # Surge 1 and unavailable 1: the new ReplicaSet at 2, the old at 3; its pods never pull.
        expect(count(rollout, f"rollout/{rs3}/desired")).to_have_text("2")
        expect(count(rollout, f"rollout/{rs2}/desired")).to_have_text("3")
        run_to(page, round(stall_from + 15, 3))
        stuck_pods = sorted(k for k, v in web_pods(page).items() if v in ("ErrImagePull", "ImagePullBackOff"))
        assert len(stuck_pods) == 2 and all(k.startswith(f"default/{rs3}-") for k in stuck_pods), web_pods(page)
        expect(rollout.locator("li.condition.bad")).to_contain_text("Progressing=False ProgressDeadlineExceeded")
        expect(rollout.locator("li.condition.bad")).to_contain_text(f'ReplicaSet "{rs3}" has timed out progressing.')
        expect(count(rollout, f"rollout/{rs2}/available")).to_have_text("3")
        expect(rollout).to_contain_text("available 3, at least 3")
        status = kubectl.run("rollout", "status", "deployment/web", check=False)
        assert status.returncode == 1 and 'deployment "web" exceeded its progress deadline' in status.stderr, status
        marks = page.evaluate("() => window.CtrlscopeTimeline.marks()")
        stalled = next(m for m in marks if m[3] == "Progressing=False" and m[4].startswith("ProgressDeadlineExceeded"))
        stall_t = stalled[0]
        assert stall_from + 10 < stall_t <= stall_from + 15, (stall_from, stall_t)
        shot(page, "story-stalled")

        # Why? From a stuck pod, back through its ReplicaSet's sync to the Deployment's sync and
        # the request that set the image.
        victim = stuck_pods[0]
        click_tile(page, victim)
        expect(page.locator("#pod-detail h2 code")).to_have_text(victim)
        page.locator("#pod-detail ol.history li").first.locator("a.why").click()
        chain = page.locator("#why-panel .why-chain")
        expect(chain).to_be_visible()
        expect(chain.locator("li").first).to_contain_text(f"pod {victim}: new \u2192 Pending")
        # Its ReplicaSet's sync created it; the Deployment's sync created that ReplicaSet at
        # revision 3; kubectl's patch (set image) is the action at the root.
        expect(chain.locator("li[data-kind='sync.start']", has_text=f"of default/{rs3} started").first).to_be_visible()
        expect(chain.locator("li[data-kind='sync.stage']", has_text="stage manage: create")).not_to_have_count(0)
        expect(
            chain.locator("li[data-kind='sync.request']", has_text=f"the sync of default/web issued create #1 of {rs3}")
        ).to_have_count(1)
        expect(
            chain.locator(
                "li[data-kind='sync.stage']", has_text=f"stage getNewReplicaSet (action=create, replicaSet={rs3}"
            )
        ).to_contain_text("revision=3")
        expect(chain.locator("li[data-kind='sync.start']", has_text="of default/web started")).to_have_count(1)
        expect(chain.locator("li").last).to_have_attribute("data-kind", "action.start")
        expect(chain.locator("li").last).to_contain_text("request patch deployments web (kubectl/")
        page.keyboard.press("Escape")

        # 6. Roll it back: kubectl rollout undo brings back revision 2's template (as revision 4).
        assert kubectl("rollout", "undo", "deployment/web").strip() == "deployment.apps/web rolled back"
        run_to(page, round(stall_t + 10, 3))
        expect(rollout).to_contain_text("revision 4")
        expect(rollout.locator(f"tr.new[data-rs='{rs2}']")).to_contain_text("nginx:1.28")
        expect(count(rollout, f"rollout/{rs2}/available")).to_have_text("4")
        expect(count(rollout, f"rollout/{rs3}/desired")).to_have_text("0")
        expect(rollout).to_contain_text("Progressing=True NewReplicaSetAvailable")
        wait_pods(
            page, "Object.entries(s).filter(([k, v]) => k.startsWith('default/web-') && v === 'Ready').length === 4"
        )
        assert (
            kubectl("rollout", "status", "deployment/web").strip().endswith('deployment "web" successfully rolled out')
        )
        # The stuck pod's tab: deleted with its ReplicaSet's scale-down, and whose it was.
        expect(page.locator("#pod-detail")).to_contain_text(
            f"Gone from the API server; its controller was ReplicaSet/{rs3}"
        )
        shot(page, "story-rolled-back")

        # 7. Back in time to the moment it stalled: the Deployment as it was then, then live again.
        view_at(page, str(stall_t))
        expect(page.locator("#past-banner")).to_be_visible(timeout=PATIENCE_MS)
        expect(page.locator("#past-at")).to_have_text(f"t={vtime(stall_t)}", timeout=PATIENCE_MS)
        expect(rollout.locator("li.condition.bad")).to_contain_text("Progressing=False ProgressDeadlineExceeded")
        expect(rollout).to_contain_text("revision 3")
        wait_pods(page, f"{stuck_pods!r}.every(k => ['ErrImagePull', 'ImagePullBackOff'].includes(s[k]))")
        page.evaluate("() => document.activeElement.blur()")
        page.keyboard.press("End")
        expect(page.locator("#past-banner")).to_be_hidden()
        expect(rollout).to_contain_text("revision 4")
        expect(rollout).to_contain_text("Progressing=True NewReplicaSetAvailable")
    finally:
        server.stop(sim)
