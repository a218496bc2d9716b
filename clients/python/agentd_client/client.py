"""AgentdClient: the generated operations (one method per operationId of /openapi.json) on one
transport, and the event stream, which resumes by Last-Event-ID."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Union

from ._generated import GeneratedOperations, TurnResult
from ._runtime import AgentdError, Transport

TERMINAL_TURN_EVENTS = frozenset({"turn.completed", "turn.failed", "turn.cancelled"})


@dataclass
class Event:
    """One event of GET /v1/events: its id (for Last-Event-ID), type, turn and session, and data."""

    id: int
    type: str
    turn_id: Optional[str]
    session_id: Optional[str]
    at: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class ReplayReset:
    """The stream could not replay everything since the last id (a gap, another server's id, a
    restart): incremental state is stale, refetch what you show. It has no id of its own."""

    reason: str = "event_gap"
    refetch: bool = True


StreamItem = Union[Event, ReplayReset]


class AgentdClient(GeneratedOperations):
    """A client of one agentd server. ``token`` is the bearer token (None for a loopback server
    without one). Every error answer raises AgentdError carrying the envelope."""

    def __init__(self, base_url: str, token: Optional[str] = None, timeout: float = 60.0) -> None:
        self._transport = Transport(base_url, token, timeout)
        self.last_event_id: Optional[int] = None

    def stream_events(self, session_id: Optional[str] = None, last_event_id: Optional[int] = None, *, reconnect: bool = True, idle_timeout: float = 60.0) -> Iterator[StreamItem]:
        """Events as they happen (GET /v1/events), each an Event with its id, or a ReplayReset.

        From ``last_event_id`` on (replayed first) when given. A dropped connection is opened again
        with the id of the last event received as Last-Event-ID, so nothing is missed or repeated;
        ``self.last_event_id`` is that id, to keep across runs. A stream that cannot resume from an
        id (another server's, or older than the replay window) yields ReplayReset first. A request
        the server refuses (a malformed id, a subscriber limit) raises AgentdError. The server sends
        a keep-alive every 15 s; ``idle_timeout`` seconds of nothing counts as a dropped connection."""
        self.last_event_id = last_event_id
        failures = 0
        while True:
            headers = {"accept": "text/event-stream"}
            if self.last_event_id is not None:
                headers["last-event-id"] = str(self.last_event_id)
            try:
                response = self._transport.open("GET", "/v1/events", {"sessionId": session_id}, None, headers, timeout=idle_timeout)
            except AgentdError as error:
                if error.status != 503 or not reconnect:
                    raise
                time.sleep(error.retry_after or 1.0)
                continue
            except OSError:
                if not reconnect:
                    raise
                failures += 1
                time.sleep(min(5.0, 0.2 * 2 ** failures))
                continue
            try:
                for item in _read_frames(response):
                    failures = 0
                    if isinstance(item, Event):
                        self.last_event_id = item.id
                    yield item
            except OSError:
                pass
            finally:
                response.close()
            if not reconnect:
                return

    def wait_for_turn(self, turn_id: str, poll_interval: float = 0.5, timeout: Optional[float] = None) -> TurnResult:
        """The turn's result once it is terminal (polls GET /v1/turns/:id/result)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            try:
                return self.get_turn_result(turn_id)
            except AgentdError as error:
                if error.code != "turn_not_terminal":
                    raise
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"turn {turn_id} is not terminal after {timeout} s")
            time.sleep(poll_interval)


def _read_frames(response: Any) -> Iterator[StreamItem]:
    """Server-Sent Events frames of a response, as Events and ReplayResets (comments skipped)."""
    event_type = "message"
    data: list[str] = []
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                item = _item(event_type, "\n".join(data))
                if item is not None:
                    yield item
            event_type, data = "message", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            event_type = value
        elif name == "data":
            data.append(value)


def _item(event_type: str, text: str) -> Optional[StreamItem]:
    payload = json.loads(text)
    if event_type == "replay.reset":
        return ReplayReset(reason=payload.get("reason", "event_gap"), refetch=bool(payload.get("refetch", True)))
    if not isinstance(payload, dict) or "id" not in payload:
        return None
    return Event(id=int(payload["id"]), type=str(payload["type"]), turn_id=payload.get("turnId"), session_id=payload.get("sessionId"), at=str(payload.get("at", "")), data=payload.get("data") or {})
