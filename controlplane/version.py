"""The Kubernetes version the simulated cluster reports: one value for the API server's
`/version` and every kubelet's `node.status.nodeInfo`.

Guarantees
----------
* `GIT_VERSION` is what `kubectl version` shows as the server version and what
  `kubectl get nodes` shows as each node's VERSION (kubeletVersion, and kubeProxyVersion, which
  a v1.32 kubelet still fills in: DisableNodeKubeProxyVersion turned on by default only in v1.33).
* Minor 32, not the v1.36 the controllers follow: `/usr/bin/kubectl` on the machines this project
  targets is the Cloud SDK dispatcher, which runs the kubectl of the reported minor and ships
  1.27 to 1.33 (../shared/spec/kubectl-surface.md §1). The node components' Event texts are the
  v1.32 ones (kubelet.py), so what the nodes say matches what they report to be.
"""

from __future__ import annotations

MAJOR = "1"
MINOR = "32"
GIT_VERSION = f"v{MAJOR}.{MINOR}.0-ctrlscope"

VERSION_INFO: dict[str, str] = {
    "major": MAJOR,
    "minor": MINOR,
    "gitVersion": GIT_VERSION,
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}
