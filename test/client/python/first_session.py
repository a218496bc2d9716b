"""The Python client against a real agentd (test/client/python-client.test.ts starts it, with the
fake provider scripted): the README's first session, typed events resumed by Last-Event-ID, a
structured result, an approval answered (and answered twice), errors carrying the envelope."""
import sys

from agentd_client import AgentdClient, AgentdError, CreateTurn, Event, ReplayReset, TERMINAL_TURN_EVENTS, Turn

base_url = sys.argv[1]
client = AgentdClient(base_url)


def check(condition, what):
    if not condition:
        raise AssertionError(what)


def events_until_terminal(stream, turn_id):
    seen = []
    for item in stream:
        check(isinstance(item, Event), f"an Event, not {item!r}")
        seen.append(item)
        if item.turn_id == turn_id and item.type in TERMINAL_TURN_EVENTS:
            return seen
    raise AssertionError("the stream ended before the turn")


# The README's walk: health, models, a session, a turn and its result.
check(client.get_health().ok is True, "healthz")
check("fake-responses" in [model.id for model in client.list_models().data], "the catalog")
session = client.create_session(title="First steps")
check(client.get_session(session.id).title == "First steps", "get_session")

stream = client.stream_events(session_id=session.id)
turn = client.create_turn(session.id, input="What is in this directory?", client_request_id="5b0d2f7e-8a43-4c1e-9f1e-2a7d4c9b8e10")
check(isinstance(turn, Turn) and turn.session_id == session.id, "create_turn answers a Turn")
seen = events_until_terminal(stream, turn.id)
check([event.type for event in seen if event.type.startswith("turn.")][-1] == "turn.completed", [event.type for event in seen])
check(all(later.id > earlier.id for earlier, later in zip(seen, seen[1:])), "ids grow")
result = client.wait_for_turn(turn.id)
check(result.output is not None and result.output.assistant_text == "the directory is empty", result)
stream.close()

# Resuming by Last-Event-ID: what came after the first event is replayed, in order, nothing before it.
first = seen[0].id
resumed = client.stream_events(session_id=session.id, last_event_id=first)
replayed = [next(resumed) for _ in range(len(seen) - 1)]
resumed.close()
check([event.id for event in replayed] == [event.id for event in seen[1:]], ([e.id for e in replayed], [e.id for e in seen]))

# A structured result, the body as a typed dataclass.
schema = {"type": "object", "properties": {"files": {"type": "integer"}}, "required": ["files"]}
turn = client.create_turn(session.id, CreateTurn(input="How many files?", output_schema=schema))
result = client.wait_for_turn(turn.id)
check(result.output.result == {"files": 0}, result.output)

# An approval: the request is answered once; a second answer is refused with the envelope.
stream = client.stream_events(session_id=session.id, last_event_id=client.last_event_id)
turn = client.create_turn(session.id, input="Create notes.txt")
for item in stream:
    if isinstance(item, Event) and item.type == "request.created":
        request_id = item.data["id"]
        break
resolved = client.resolve_request(request_id, decision="allow_once")
check(resolved.id == request_id, resolved)
try:
    client.resolve_request(request_id, decision="allow_once")
    raise AssertionError("a second answer was taken")
except AgentdError as error:
    check(error.status == 409 and error.code == "request_already_resolved" and error.request_id, error)
check(client.wait_for_turn(turn.id).turn.status == "completed", "the approved turn ends")
stream.close()

# Errors carry the envelope.
try:
    client.get_session("no-such-session")
    raise AssertionError("an unknown session was found")
except AgentdError as error:
    check(error.status == 404 and error.code == "session_not_found" and error.envelope["error"]["requestId"] == error.request_id, error)
try:
    client.create_turn(session.id, input="x", output_schema={"type": "string"})
    raise AssertionError("a non-object schema was taken")
except AgentdError as error:
    check(error.status == 422 and error.code == "invalid_output_schema", error)
try:
    client.create_turn(session.id)
    raise AssertionError("a body without input was sent")
except TypeError as error:
    check("input" in str(error), error)

# A stream id from another server (far beyond this one's): replay.reset first, never a hang.
foreign = client.stream_events(session_id=session.id, last_event_id=10**12)
check(isinstance(next(foreign), ReplayReset), "replay.reset for another server's id")
foreign.close()
try:
    next(client.stream_events(last_event_id=-1))
    raise AssertionError("a malformed id was taken")
except AgentdError as error:
    check(error.status == 400 and error.code == "invalid_last_event_id", error)

client.delete_session(session.id)
print("python client: all checks passed")
