"""A simulated container's log: what the kubelet did with one container instance.

A simulated pod runs no process, so there is no output to show. What `kubectl logs` shows instead
is the story of the container instance the request names, told from the status the kubelet wrote
(`status.containerStatuses`, the pod's conditions, deletion and eviction fields): when it started,
when it became ready, that it is being stopped, how it exited, the back-off before its restart.

Guarantees
----------
* Pure: a function of the stored pod and the virtual time `now`; nothing is read from or written
  to the simulation, so looking at a log never changes a report.
* The instance is chosen as the kubelet's `GetContainerLogs` chooses it (pkg/kubelet/kubelet_pods.go,
  `validateContainerLogStatus`): `previous` → `lastState.terminated`; otherwise the running
  instance, else the terminated one, else the last terminated one. The refusals carry upstream's
  text and reason: an unknown pod is 404 NotFound; an unknown container, a container waiting to
  start, or a missing previous instance is 400 BadRequest (registry/core/pod `ValidateContainer`).
* A pod not bound to a node has an empty log (upstream's LogLocation has no location for it).
* Every line carries the virtual time it describes; lines are in time order, each at most one
  line of text (no newline from a stored field reaches the output).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from controlplane.apiserver.errors import bad_request
from controlplane.kernel import parse_rfc3339, rfc3339

Obj = dict[str, Any]

PREFIX = "ctrlscope: "
NO_PROCESS = "a simulated container runs no process: this log is what the kubelet did with it"


class ContainerLog(NamedTuple):
    """The log of one container instance.

    `lines` are `(virtual time, text)` in time order; `container_id` names the instance ("" when
    the pod has no node, and so no instance); `finished` is True once the instance has stopped,
    so its log grows no more (a follower ends there, as a log stream ends when its container exits).
    """

    lines: list[tuple[float, str]]
    container_id: str
    finished: bool


def container_name(pod: Obj, container: str | None) -> str:
    """The container a log request means (ValidateContainer): the only one when none is named."""
    name = pod["metadata"]["name"]
    names = [c.get("name", "") for c in (pod.get("spec") or {}).get("containers") or []]
    if not container:
        if len(names) == 1:
            return str(names[0])
        if not names:
            raise bad_request(f"a container name must be specified for pod {name}")
        raise bad_request(f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]")
    if container not in names:
        raise bad_request(f"container {container} is not valid for pod {name}")
    return container


def container_log(pod: Obj, container: str | None, previous: bool, now: float) -> ContainerLog:
    """The log of `container` (None: the pod's only one) of `pod`; raises ApiError as upstream."""
    name = container_name(pod, container)
    pod_name = pod["metadata"]["name"]
    if not (pod.get("spec") or {}).get("nodeName"):
        return ContainerLog([], "", False)
    status: Obj = pod.get("status") or {}
    found = next((s for s in status.get("containerStatuses") or [] if s.get("name") == name), None)
    if found is None:
        # The kubelet has not reported the container yet: it is still being created.
        raise bad_request(f'container "{name}" in pod "{pod_name}" is waiting to start: ContainerCreating')
    state: Obj = found.get("state") or {}
    last: Obj = (found.get("lastState") or {}).get("terminated") or {}
    running, terminated, waiting = state.get("running"), state.get("terminated"), state.get("waiting")
    if previous:
        if not last.get("containerID"):
            raise bad_request(f'previous terminated container "{name}" in pod "{pod_name}" not found')
        return _finished(found, last, pod, status, waiting, current=False)
    if running is not None:
        return _running(found, running, pod, status, now)
    if terminated is not None:
        if terminated.get("containerID"):
            return _finished(found, terminated, pod, status, None, current=True)
        if last.get("containerID"):
            return _finished(found, last, pod, status, waiting, current=False)
        raise bad_request(f'container "{name}" in pod "{pod_name}" is terminated')
    if last.get("containerID"):
        return _finished(found, last, pod, status, waiting, current=False)
    reason = (waiting or {}).get("reason") or "ContainerCreating"
    raise bad_request(f'container "{name}" in pod "{pod_name}" is waiting to start: {_one_line(reason)}')


def _started(found: Obj, started_at: str, container_id: str) -> tuple[float, str]:
    image = _one_line(str(found.get("image", "")))
    return (
        _time(started_at),
        f'{PREFIX}container "{found["name"]}" started at {started_at} (image {image}, {_one_line(container_id)}); '
        f"{NO_PROCESS}",
    )


def _running(found: Obj, running: Obj, pod: Obj, status: Obj, now: float) -> ContainerLog:
    container_id = str(found.get("containerID", ""))
    started_at = str(running.get("startedAt", ""))
    lines = [_started(found, started_at, container_id)]
    restarts = found.get("restartCount")
    if isinstance(restarts, int) and restarts > 0:
        lines.append((_time(started_at), f'{PREFIX}container "{found["name"]}" was restarted {restarts} times so far'))
    start = _time(started_at)
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "ContainersReady"), None)
    if found.get("ready") and ready is not None and ready.get("status") == "True":
        # ContainersReady's transition time is when this instance (all containers share one
        # lifecycle in the simulation) became ready; one from an older instance predates the start.
        at = max(_time(str(ready.get("lastTransitionTime", ""))), start)
        lines.append((at, f'{PREFIX}container "{found["name"]}" is ready at {rfc3339(at)}'))
    meta = pod["metadata"]
    if meta.get("deletionTimestamp"):
        grace = meta.get("deletionGracePeriodSeconds")
        deadline = _time(str(meta["deletionTimestamp"]))
        asked = deadline - float(grace) if isinstance(grace, (int, float)) else deadline
        lines.append(
            (
                max(min(asked, now), start),
                f'{PREFIX}the pod is being deleted: the kubelet stops container "{found["name"]}" '
                f"(grace period {grace}s, killed at {meta['deletionTimestamp']} if still running)",
            )
        )
    return ContainerLog(sorted(lines, key=lambda line: line[0]), container_id, False)


def _finished(
    found: Obj, terminated: Obj, pod: Obj, status: Obj, waiting: Obj | None, *, current: bool
) -> ContainerLog:
    container_id = str(terminated.get("containerID", ""))
    started_at = str(terminated.get("startedAt", ""))
    finished_at = str(terminated.get("finishedAt", ""))
    lines = [_started(found, started_at, container_id)]
    end = _time(finished_at)
    if current and status.get("reason") == "Evicted":
        lines.append((end, f"{PREFIX}the kubelet evicted the pod: {_one_line(str(status.get('message', '')))}"))
    code = terminated.get("exitCode")
    reason = _one_line(str(terminated.get("reason", "")))
    lines.append((end, f'{PREFIX}container "{found["name"]}" exited with code {code} ({reason}) at {finished_at}'))
    if waiting is not None and waiting.get("reason") == "CrashLoopBackOff":
        # The instance crashed and the kubelet waits out the back-off before the next one.
        lines.append((end, f"{PREFIX}CrashLoopBackOff: {_one_line(str(waiting.get('message', '')))}"))
    return ContainerLog(lines, container_id, True)


def _time(value: str) -> float:
    try:
        return parse_rfc3339(value)
    except ValueError:
        return 0.0


def _one_line(text: str) -> str:
    return " ".join(text.split())
