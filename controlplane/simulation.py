"""The facade: what code outside `controlplane/` uses of the core — the web layer, the tests, the
benchmarks, scripts and notebooks. Nothing inside `controlplane/` imports it; the core's modules
import the module that defines a name (the world is `controlplane.world`). Every name here is
re-exported from the module that defines it.

The session service (`controlplane.session.service`): the one interface of the web layer.
`SessionService` (start, command, state, past, fork, export, kube, subscribe), the sessions it
hands out (`Session`, to which a `SessionListener` subscribes), its view models and value types
(`session_state`; `views`, what the page shows of a world; `PastOrigin`, `ForkOrigin`, `Position`),
the Kubernetes API of a session's world (`Kube` with its `Watcher`s in a `WatchHub`, the
`TablePrinter` the web side supplies, `WATCH_LEASE`, `scoped_watch`, `watch_error_line`; the
resources it serves, `RESOURCES`, `ResourceInfo`, `VERBS`; `api_http`, the mapping of an HTTP
request to the API server's requests and Statuses that every HTTP door shares), and the vocabulary its commands
speak: `CommandError`, `SPEEDS`, `parse_speed`, `parse_time`, `open_edit` / `edit_preview` (the
object `kubectl edit` opens and a dry run of its change), the limits of what a session records,
the page's time format (`format_vtime`), the pod states a page colours (`POD_STATES`),
`EXPECTATIONS_TIMEOUT` (an expectations record's TTL, which the page draws ages against).
docs/architecture.md says which module of the web side calls which method.

The scenario format (docs/scenarios.md): `Scenario`, `ScenarioError`, `load_file`,
`load_scenario`, `library`, `SCENARIO_DIR`, `ACTION_VERBS`, `check_seed` (the one check of a
seed), the controller versions, and the compare page's config blocks.

The headless Python entry, for scripts and notebooks:

* `Simulation` — one deterministic world: `Simulation.from_file(name_or_path, seed=...)`, then
  `start()`, `apply(action)` / `act(action)`, `step()`, `run_until(t)`, `report()`
  (see `controlplane.world`);
* `run_scenario(name_or_path, seed=..., until=...)` — load a scenario file, run it and return its
  report, as `python -m controlplane run` prints it (see `controlplane.runner`).

The other names are what the web layer still reads of the core beside the service (the replay
primitive of a session's past, the ceilings, the API server's errors, resources and documents,
...).
"""

from __future__ import annotations

from controlplane import safeyaml as safeyaml
from controlplane.apiserver import http as api_http  # noqa: F401 - the HTTP mapping every HTTP door shares
from controlplane.apiserver.decode import duplicate_fields_error as duplicate_fields_error
from controlplane.apiserver.errors import ApiError as ApiError
from controlplane.apiserver.errors import resource_expired as resource_expired
from controlplane.apiserver.openapi import openapi_v2_document as openapi_v2_document
from controlplane.apiserver.openapi import openapi_v3_documents as openapi_v3_documents
from controlplane.apiserver.resources import RESOURCES as RESOURCES
from controlplane.apiserver.resources import VERBS as VERBS
from controlplane.apiserver.resources import ResourceInfo as ResourceInfo
from controlplane.causes import CONTROLLER_OF_QUEUE as CONTROLLER_OF_QUEUE
from controlplane.causes import trace_row as trace_row
from controlplane.compare import default_pair as default_pair
from controlplane.compare import describe_block as describe_block
from controlplane.compare import diff_reports as diff_reports
from controlplane.compare import parse_block as parse_block
from controlplane.compare import with_config as with_config
from controlplane.controllers.registry import CONTROLLERS as CONTROLLER_REGISTRY  # noqa: F401 - the inspector's links
from controlplane.controllers.registry import REGISTRY as _REGISTRY
from controlplane.controllers.registry import SYNC_STAGES as SYNC_STAGES
from controlplane.controllers.registry import SYNC_VERSIONS as SYNC_VERSIONS
from controlplane.controllers.stages import K15 as K15
from controlplane.controllers.stages import UPSTREAM_COMMIT as REPLICATION_MANAGER_COMMIT  # noqa: F401 - v1.5's links
from controlplane.duplicate_keys import collect_duplicates as collect_duplicates
from controlplane.duplicate_keys import read_json as read_json
from controlplane.expectations import EXPECTATIONS_TIMEOUT as EXPECTATIONS_TIMEOUT
from controlplane.gcpolicy import GcHold as GcHold
from controlplane.gcpolicy import simulation_gc as simulation_gc
from controlplane.kernel import EPOCH as EPOCH
from controlplane.kernel import parse_rfc3339 as parse_rfc3339
from controlplane.kernel import vtime as vtime
from controlplane.labels import parse as parse_label_selector  # noqa: F401 - the page's search box
from controlplane.labels import selector_from_label_selector as selector_from_label_selector
from controlplane.limits import MAX_CLIENT as MAX_CLIENT
from controlplane.limits import MAX_OBJECT_DEPTH as MAX_OBJECT_DEPTH
from controlplane.limits import MAX_REQUEST_BYTES as MAX_REQUEST_BYTES
from controlplane.limits import MAX_SECONDS as MAX_SECONDS
from controlplane.limits import nested_deeper_than as nested_deeper_than
from controlplane.nodes import POD_STATES as POD_STATES
from controlplane.runner import run_scenario as run_scenario
from controlplane.scenario import ACTION_VERBS as ACTION_VERBS
from controlplane.scenario import CONTROLLER_VERSIONS as CONTROLLER_VERSIONS
from controlplane.scenario import DEFAULT_CONTROLLER_VERSION as DEFAULT_CONTROLLER_VERSION
from controlplane.scenario import NOWHERE as NOWHERE
from controlplane.scenario import SCENARIO_DIR as SCENARIO_DIR
from controlplane.scenario import OperatorSource as OperatorSource
from controlplane.scenario import Scenario as Scenario
from controlplane.scenario import ScenarioError as ScenarioError
from controlplane.scenario import check_seed as check_seed
from controlplane.scenario import library as library
from controlplane.scenario import load_file as load_file
from controlplane.scenario import load_scenario as load_scenario
from controlplane.session import views as views
from controlplane.session.commands import SPEEDS as SPEEDS
from controlplane.session.commands import CommandError as CommandError
from controlplane.session.commands import _speed as parse_speed  # noqa: F401 - a speed a pair runs at
from controlplane.session.commands import _time as parse_time  # noqa: F401 - a time a pair runs to
from controlplane.session.edit import open_edit as open_edit
from controlplane.session.edit import preview as edit_preview  # noqa: F401
from controlplane.session.kube import WATCH_LEASE as WATCH_LEASE
from controlplane.session.kube import Kube as Kube
from controlplane.session.kube import TablePrinter as TablePrinter
from controlplane.session.kube import Watcher as Watcher
from controlplane.session.kube import WatchHub as WatchHub
from controlplane.session.kube import scoped_watch as scoped_watch
from controlplane.session.kube import watch_error_line as watch_error_line
from controlplane.session.service import ForkOrigin as ForkOrigin
from controlplane.session.service import PastOrigin as PastOrigin
from controlplane.session.service import SessionService as SessionService
from controlplane.session.service import session_state as session_state
from controlplane.session.session import MAX_RECORDED_ACTIONS as MAX_RECORDED_ACTIONS
from controlplane.session.session import MAX_RECORDED_BYTES as MAX_RECORDED_BYTES
from controlplane.session.session import Session as Session
from controlplane.session.session import SessionListener as SessionListener
from controlplane.session.timefmt import vtime as format_vtime  # noqa: F401 - the page's one time format
from controlplane.session.timetravel import keyframes as keyframes  # the replay worker process's broker
from controlplane.session.timetravel.replay import NANOSECOND as NANOSECOND
from controlplane.session.timetravel.replay import Replay as Replay
from controlplane.session.timetravel.replay import ReplayError as ReplayError
from controlplane.session.timetravel.worker import Requests as PastRequests  # noqa: F401 - the replay worker's
from controlplane.session.timetravel.worker import Worker as PastWorld  # noqa: F401 - the replay worker's
from controlplane.version import VERSION_INFO as VERSION_INFO
from controlplane.vocabulary import KIND_RESOURCES as KIND_RESOURCES
from controlplane.world import CLUSTER_SCOPED as CLUSTER_SCOPED
from controlplane.world import RECORD_FILTERS as RECORD_FILTERS
from controlplane.world import LimitError as LimitError
from controlplane.world import Position as Position
from controlplane.world import Simulation as Simulation
from controlplane.world import configured as configured
from controlplane.world import cut_scenario as cut_scenario
from controlplane.world import recording_of as recording_of

CONTROLLER_STAGE_GROUPS = _REGISTRY.stage_groups  # the breakpoint form's stage lists
