"""A kopf operator with a planted bug, for the fault swarm to find (docs/operators.md, "Swarm
your operator").

It gives every ReplicaSet one "sidecar" Pod: its create handler creates the Pod, waits for it to
settle, then records the Pod's name in an annotation on the ReplicaSet. The bug: the handler is
not idempotent. It never looks for a sidecar it made before, so when the operator crashes and
restarts between its create and kopf's record of the handler's success (or the handler fails
after its create and kopf retries it), the handler runs again and makes a second sidecar.

The fix is to look before creating: list the Pods labelled `sidecar-of=<name>` owned by this
ReplicaSet's uid and create one only when there is none (or name the Pod after the ReplicaSet,
so that a second create answers 409 AlreadyExists).

Its oracle, `one-sidecar-per-replicaset`, states the promise the swarm checks: no ReplicaSet
owns more than one live sidecar.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import kopf
from kopf._cogs.clients import api

from controlplane.operators.oracle import Store, oracle

PREFIX = "sidecars.example"
LABEL = "sidecar-of"
SETTLE = 2.0  # seconds the handler waits for its sidecar before recording it
_settings: list[kopf.OperatorSettings] = []


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=PREFIX, key="last-handled-configuration"
    )
    settings.networking.error_backoffs = [0.5, 1, 2]
    settings.watching.server_timeout = 300
    settings.posting.level = logging.WARNING
    _settings.append(settings)


@kopf.on.create("replicasets")
async def add_sidecar(name: str, namespace: str, uid: str, logger: kopf.Logger, **_: Any) -> None:
    settings = _settings[-1]
    sidecar = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "generateName": f"{name}-sidecar-",
            "namespace": namespace,
            "labels": {LABEL: name},
            # Not a controller reference: the ReplicaSet does not count it; the garbage collector
            # deletes it with the ReplicaSet.
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": uid}],
        },
        "spec": {"containers": [{"name": "sidecar", "image": "busybox:1.36"}]},
    }
    # BUG: no look for an existing sidecar first (see the module's docstring).
    created = await api.post(
        url=f"/api/v1/namespaces/{namespace}/pods", payload=sidecar, settings=settings, logger=logger
    )
    await asyncio.sleep(SETTLE)
    annotation = {"metadata": {"annotations": {f"{PREFIX}/sidecar": created["metadata"]["name"]}}}
    await api.patch(
        url=f"/apis/apps/v1/namespaces/{namespace}/replicasets/{name}",
        payload=annotation,
        headers={"Content-Type": "application/merge-patch+json"},
        settings=settings,
        logger=logger,
    )
    logger.info(f"sidecar {created['metadata']['name']} for {name}")


@oracle("one-sidecar-per-replicaset")
def one_sidecar_per_replicaset(store: Store) -> Iterator[str]:
    sidecars: dict[str, list[str]] = {}
    for pod in store.list("pods"):
        meta = pod["metadata"]
        if LABEL not in (meta.get("labels") or {}) or meta.get("deletionTimestamp"):
            continue
        for ref in meta.get("ownerReferences") or []:
            if ref.get("kind") == "ReplicaSet":
                sidecars.setdefault(ref["uid"], []).append(meta["name"])
    for rs in store.list("replicasets"):
        meta = rs["metadata"]
        names = sidecars.get(meta["uid"], [])
        if len(names) > 1 and not meta.get("deletionTimestamp"):
            yield f"ReplicaSet {meta['namespace']}/{meta['name']} has {len(names)} sidecars: {', '.join(sorted(names))}"
