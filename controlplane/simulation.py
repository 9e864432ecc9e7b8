"""The facade: what code outside `controlplane/` uses of the core — the web layer, the tests, the
benchmarks, scripts and notebooks. Nothing inside `controlplane/` imports it; the core's modules
import the module that defines a name (the world is `controlplane.world`).

The headless Python entry, for scripts and notebooks:

* `Simulation` — one deterministic world: `Simulation.from_file(name_or_path, seed=...)`, then
  `start()`, `apply(action)` / `act(action)`, `step()`, `run_until(t)`, `report()`
  (see `controlplane.world`);
* `run_scenario(name_or_path, seed=..., until=...)` — load a scenario file, run it and return its
  report, as `python -m controlplane run` prints it (see `controlplane.runner`).

The other names are what the web layer reads of the core (its value types, the replay primitive
of a session's past, the ceilings, the API server's errors and documents, ...). Each is
re-exported from the module that defines it.
"""

from __future__ import annotations

from controlplane import safeyaml as safeyaml
from controlplane.apiserver.decode import duplicate_fields_error as duplicate_fields_error
from controlplane.apiserver.errors import ApiError as ApiError
from controlplane.apiserver.errors import resource_expired as resource_expired
from controlplane.apiserver.errors import too_large_resource_version as too_large_resource_version
from controlplane.apiserver.errors import too_many_requests as too_many_requests
from controlplane.apiserver.openapi import openapi_v2_document as openapi_v2_document
from controlplane.apiserver.openapi import openapi_v3_documents as openapi_v3_documents
from controlplane.causes import CONTROLLER_OF_QUEUE as CONTROLLER_OF_QUEUE
from controlplane.causes import trace_row as trace_row
from controlplane.compare import default_pair as default_pair
from controlplane.compare import describe_block as describe_block
from controlplane.compare import diff_reports as diff_reports
from controlplane.compare import parse_block as parse_block
from controlplane.compare import with_config as with_config
from controlplane.controllers.registry import CONTROLLERS as CONTROLLER_REGISTRY  # noqa: F401 - the inspector's links
from controlplane.controllers.registry import REGISTRY as _REGISTRY
from controlplane.controllers.stages import K15 as K15
from controlplane.duplicate_keys import collect_duplicates as collect_duplicates
from controlplane.duplicate_keys import read_json as read_json
from controlplane.expectations import EXPECTATIONS_TIMEOUT as EXPECTATIONS_TIMEOUT
from controlplane.gcpolicy import GcHold as GcHold
from controlplane.gcpolicy import simulation_gc as simulation_gc
from controlplane.informers import NAMESPACE_INDEX as NAMESPACE_INDEX
from controlplane.kernel import EPOCH as EPOCH
from controlplane.kernel import parse_rfc3339 as parse_rfc3339
from controlplane.kernel import vtime as vtime
from controlplane.labels import parse as parse_label_selector  # noqa: F401 - the page's search box
from controlplane.limits import MAX_CLIENT as MAX_CLIENT
from controlplane.limits import MAX_OBJECT_DEPTH as MAX_OBJECT_DEPTH
from controlplane.limits import MAX_REQUEST_BYTES as MAX_REQUEST_BYTES
from controlplane.limits import MAX_SECONDS as MAX_SECONDS
from controlplane.limits import nested_deeper_than as nested_deeper_than
from controlplane.nodes import POD_STATES as POD_STATES
from controlplane.runner import run_scenario as run_scenario
from controlplane.scenario import CONTROLLER_VERSIONS as CONTROLLER_VERSIONS
from controlplane.scenario import DEFAULT_CONTROLLER_VERSION as DEFAULT_CONTROLLER_VERSION
from controlplane.session.timetravel.replay import NANOSECOND as NANOSECOND
from controlplane.session.timetravel.replay import Replay as Replay
from controlplane.session.timetravel.replay import ReplayError as ReplayError
from controlplane.version import VERSION_INFO as VERSION_INFO
from controlplane.vocabulary import KIND_RESOURCES as KIND_RESOURCES
from controlplane.world import CLUSTER_SCOPED as CLUSTER_SCOPED
from controlplane.world import RECORD_FILTERS as RECORD_FILTERS
from controlplane.world import REPLICATION_MANAGER_COMMIT as REPLICATION_MANAGER_COMMIT
from controlplane.world import SYNC_STAGES as SYNC_STAGES
from controlplane.world import LimitError as LimitError
from controlplane.world import Position as Position
from controlplane.world import Simulation as Simulation
from controlplane.world import configured as configured
from controlplane.world import cut_scenario as cut_scenario
from controlplane.world import request_of as request_of

CONTROLLER_STAGE_GROUPS = _REGISTRY.stage_groups  # the breakpoint form's stage lists
