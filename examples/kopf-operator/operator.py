"""A small kopf operator to run against a ctrlscope simulation: it labels every Pod that a
ReplicaSet controls with `seen-by=kopf`.

Run it with the kubeconfig of a simulation (see README.md beside this file):

    KUBECONFIG=sim.kubeconfig kopf run --standalone --namespace default operator.py

What it shows off in ctrlscope: its patches are actions in the session's recording (client
`kopf/…`), its pod watch is listed under "Connected clients" with its lag, and faults can aim at
it alone (`apiFault {client: kopf, …}`, `watchFault {client: kopf, fault: drop}`).

Choices, and why:
* Progress and the diff base live in annotations: ctrlscope, like a cluster, prunes the unknown
  `status.kopf` of a built-in kind, so kopf's default storage would forget what it handled.
* API errors are retried quickly (`error_backoffs`): an injected 500 is retried, not fatal.
* Level-triggered: the handlers fire on resume, create and every update of a controlled pod that
  still lacks the label, so a dropped watch or a failed patch is made good by the next event.
"""

from __future__ import annotations

import logging
from typing import Any

import kopf

LABEL = "seen-by"
VALUE = "kopf"
PREFIX = "ctrlscope.example"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=PREFIX)
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix=PREFIX, key="last-handled-configuration"
    )
    settings.networking.error_backoffs = [0.5, 1, 1, 2, 2, 4]
    settings.watching.server_timeout = 60
    settings.posting.level = logging.WARNING  # Events only for failures, not for every handler


def controlled_by_replicaset(meta: kopf.Meta, **_: Any) -> bool:
    refs = meta.get("ownerReferences") or []
    return any(ref.get("kind") == "ReplicaSet" and ref.get("controller") for ref in refs)


@kopf.on.resume("pods", labels={LABEL: kopf.ABSENT}, when=controlled_by_replicaset)
@kopf.on.create("pods", labels={LABEL: kopf.ABSENT}, when=controlled_by_replicaset)
@kopf.on.update("pods", labels={LABEL: kopf.ABSENT}, when=controlled_by_replicaset)
def label_pod(patch: kopf.Patch, name: str, logger: kopf.Logger, **_: Any) -> None:
    patch.metadata.labels[LABEL] = VALUE
    logger.info(f"labelled pod {name} {LABEL}={VALUE}")
