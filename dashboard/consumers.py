"""The websocket of one simulation page: frames out, commands in. Thin: it forwards.

* `connect`: Origin already checked (`access.SameOriginWebsocket`: the dashboard's own origin
  only); the simulation must be running; join its viewers group, accept, and ask the host for
  the full state.
* Flow control: the page acknowledges frames cumulatively (`{"type": "ack", "seq": n}`: every
  frame up to n; static/dashboard/live.js sends one at most once a second, or when 4 frames
  wait, and one for each full state at once). With `WINDOW` frames unacknowledged the
  consumer stops sending (frames are skipped, never queued), and once the page has caught up
  it asks the host to catch it up: the frames it skipped, merged into one frame (`catchup`;
  a full state only if the host no longer keeps them). A frame lost between host and consumer
  (a gap in `seq`) does the same. A slow page therefore costs the simulation and the other
  viewers nothing, and gets what changed, not the world again.
* Commands (`{"type": "cmd", "id": n, "cmd": {"op": …}}`) go to the host with this viewer's
  control right; the answer comes back as `{"type": "reply", "id": n, "result": …}`. A message
  that is not such an object (not JSON, nested deeper than `MAX_OBJECT_DEPTH`, over
  `MAX_MESSAGE` bytes) gets `{"type": "error", …}` and changes nothing; the connection stays.
* The Kubernetes verbs (`k8s_*`) need the control right, as on the HTTP API. A `k8s_watch`
  sends to this viewer only, as `{"type": "watch", "watch": id, "text": lines, "end": bool}`
  (see docs/dashboard.md); the host names the watch after this viewer, whatever channel the
  command names.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from asgiref.sync import sync_to_async
from autobahn.exception import Disconnected
from channels.consumer import get_handler_name
from channels.exceptions import ChannelFull
from channels.generic.websocket import AsyncWebsocketConsumer

from controlplane.simulation import MAX_OBJECT_DEPTH, nested_deeper_than
from dashboard.access import scope_can_control
from dashboard.host import command_channel, viewers_group

WINDOW = 8  # frames in flight (sent, not yet acknowledged) before a viewer counts as behind
CHUNK = 512 * 1024  # a longer message goes out in parts (Daphne refuses messages over 1 MiB)
MAX_MESSAGE = 256 * 1024  # bytes a viewer may send in one message (a YAML manifest fits)
# Channels (>= 4.2) closes stale database connections before every message a consumer handles,
# in a hop to asgiref's worker thread (`AsyncConsumer.dispatch`). A viewer's frames and
# acknowledgements never touch the database: at 50 viewers those hops were ~150 a second, each
# one a thread wake-up and a GIL hand-over with the simulation running on the event loop. Only
# the handshake reads the database (`_alive`), so only it keeps the hop.
DATABASE_MESSAGES = frozenset({"websocket.connect"})


@sync_to_async
def _alive(sim_id: str) -> bool:
    from dashboard.models import SimulationRecord

    return SimulationRecord.alive().filter(id=sim_id).exists()


class SimulationConsumer(AsyncWebsocketConsumer):
    async def dispatch(self, message: dict[str, Any]) -> None:
        if message["type"] in DATABASE_MESSAGES:
            await super().dispatch(message)
            return
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def connect(self) -> None:
        self.sim_id: str = self.scope["url_route"]["kwargs"]["sim_id"]
        self.control = scope_can_control(self.scope)
        self.last_seq: int | None = None  # seq of the last frame seen from the host (sent or skipped)
        self.last_sent = -1  # seq of the last frame (or state) sent to the page
        self.acked = -1
        self.behind = False
        self.focus: list[list[str]] = []
        self.open_pod: str | None = None  # the pod its Pod tab shows, kept live (a focused panel)
        self.owner: list[str] | None = None  # the key the whole page is focused on (#19 §3)
        if not await _alive(self.sim_id):
            await self.close(code=4404)
            return
        await self.channel_layer.group_add(viewers_group(self.sim_id), self.channel_name)
        await self.accept()
        await self.send_json({"type": "hello", "control": self.control, "sim": self.sim_id})
        await self._ask_state()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "sim_id"):
            await self.channel_layer.group_discard(viewers_group(self.sim_id), self.channel_name)
            await self._to_host({"op": "bye"})

    async def send(
        self, text_data: str | None = None, bytes_data: bytes | None = None, close: bool | int = False
    ) -> None:
        """Send, unless the browser has already gone: a host message that was queued for this
        consumer before its disconnect was dispatched finds Daphne's protocol closed. That is the
        viewer leaving, not an error (nothing to send to, nothing to log)."""
        with contextlib.suppress(Disconnected):
            await super().send(text_data=text_data, bytes_data=bytes_data, close=close)

    async def send_json(self, content: dict[str, Any]) -> None:
        await self.send(text_data=json.dumps(content, separators=(",", ":")))

    async def send_text(self, text: str) -> None:
        """One message of the host's JSON text; a long one as `{"type": "parts", "n": N}` followed
        by N raw slices that the page joins before parsing."""
        if len(text) <= CHUNK:
            await self.send(text_data=text)
            return
        parts = [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)]
        await self.send_json({"type": "parts", "n": len(parts)})
        for part in parts:
            await self.send(text_data=part)

    async def _to_host(self, cmd: dict[str, Any], msg_id: Any = None) -> None:
        await self.channel_layer.send(
            command_channel(self.sim_id),
            {
                "type": "sim.command",
                "cmd": cmd,
                "reply_to": self.channel_name,
                "viewer": self.channel_name,
                "control": self.control,
                "id": msg_id,
            },
        )

    async def _ask_state(self) -> None:
        self.last_seq = None
        self.behind = False
        await self._to_host({"op": "state", "focus": self.focus, "pod": self.open_pod, "owner": self.owner})

    async def _catch_up(self) -> None:
        """The page has every frame up to `last_sent`: ask for the rest, merged (the host answers
        like a state, as `sim.state`, with a frame or, if it no longer has them, a full state)."""
        self.last_seq = None
        self.behind = False
        await self._to_host({"op": "catchup", "since": self.last_sent})

    # -- from the host ------------------------------------------------------------------------------
    async def sim_state(self, event: dict[str, Any]) -> None:
        self.last_seq = self.last_sent = event["seq"]
        self.acked = event["seq"] - 1
        await self.send_text(event["text"])

    async def sim_frame(self, event: dict[str, Any]) -> None:
        if self.last_seq is None or event["seq"] <= self.last_seq:
            return  # waiting for a state, or already covered by it
        if event["seq"] != self.last_seq + 1:
            await self._catch_up()  # a frame was lost on the way: the host merges what is missing
            return
        self.last_seq = event["seq"]
        if self.behind or self.last_sent - self.acked >= WINDOW:
            self.behind = True  # skip: the page will resynchronise once it has caught up
            return
        self.last_sent = event["seq"]
        await self.send_text(event["text"])

    async def sim_reply(self, event: dict[str, Any]) -> None:
        reply = {"type": "reply", "id": event.get("id"), "op": event.get("op"), "result": event["result"]}
        await self.send_text(json.dumps(reply, separators=(",", ":")))  # (a list can be long)

    async def sim_past(self, event: dict[str, Any]) -> None:
        """A moment of the past this viewer asked for (`past` command): the host's JSON text."""
        await self.send_text(event["text"])

    async def k8s_watch(self, event: dict[str, Any]) -> None:
        """Events of one of this viewer's watches: newline-delimited JSON, as the HTTP API streams
        them; `end` once the watch is over (its last text may be an ERROR event)."""
        message = {
            "type": "watch",
            "watch": event.get("watch"),
            "text": event.get("text", ""),
            "end": bool(event.get("end")),
        }
        await self.send_text(json.dumps(message, separators=(",", ":")))

    async def sim_stopped(self, event: dict[str, Any]) -> None:
        await self.send_json({"type": "stopped"})
        await self.close(code=4410)

    # -- from the page ------------------------------------------------------------------------------
    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None or len(text_data) > MAX_MESSAGE:
            await self.send_json(
                {"type": "error", "error": f"messages must be JSON text of at most {MAX_MESSAGE} bytes"}
            )
            return
        try:
            message = json.loads(text_data)
        except RecursionError:  # nested deeper than the parser goes (thousands of levels)
            message = _TOO_DEEP
        except ValueError:
            await self.send_json({"type": "error", "error": "messages must be JSON objects"})
            return
        if message is _TOO_DEEP or nested_deeper_than(message):
            await self.send_json({"type": "error", "error": f"messages must nest at most {MAX_OBJECT_DEPTH} levels"})
            return
        kind = message.get("type") if isinstance(message, dict) else None
        if kind == "ack":
            await self._ack(message.get("seq"))
        elif kind == "cmd" and isinstance(message.get("cmd"), dict) and isinstance(message["cmd"].get("op"), str):
            cmd = message["cmd"]
            if cmd["op"] in ("state", "catchup", "bye"):
                await self.send_json(
                    {"type": "error", "id": message.get("id"), "error": f"{cmd['op']} is not a command"}
                )
                return
            if cmd["op"] == "focus":
                if "keys" in cmd:
                    keys = cmd.get("keys")
                    self.focus = keys if isinstance(keys, list) else []
                if "pod" in cmd:
                    pod = cmd.get("pod")
                    self.open_pod = pod if isinstance(pod, str) else None
                if "owner" in cmd:
                    owner = cmd.get("owner")
                    self.owner = owner if isinstance(owner, list) and len(owner) == 2 else None
            try:
                await self._to_host(cmd, message.get("id"))
            except ChannelFull:
                await self.send_json(
                    {"type": "error", "id": message.get("id"), "error": "the simulation is busy: try again"}
                )
        elif kind == "resync":
            await self._ask_state()
        else:
            await self.send_json(
                {
                    "type": "error",
                    "id": message.get("id") if isinstance(message, dict) else None,
                    "error": "unknown message: expected {type: ack|cmd|resync}",
                }
            )

    async def _ack(self, seq: Any) -> None:
        if not isinstance(seq, int) or self.last_seq is None or not self.acked < seq <= self.last_sent:
            return
        self.acked = seq
        if self.behind and self.acked == self.last_sent:
            await self._catch_up()  # caught up with what it was sent: now the frames it skipped


_TOO_DEEP = object()


class NotFoundConsumer(AsyncWebsocketConsumer):
    """Any other websocket path: refuse the handshake cleanly (no traceback, no 500)."""

    async def connect(self) -> None:
        await self.close(code=4404)
