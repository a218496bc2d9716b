"""agentd-client: a typed Python client of agentd, generated from its /openapi.json.

    from agentd_client import AgentdClient
    client = AgentdClient("http://127.0.0.1:4096")
    session = client.create_session(title="First steps")
"""
from ._generated import *  # noqa: F401,F403  (the dataclasses of every schema, EventType)
from ._runtime import AgentdError
from .client import TERMINAL_TURN_EVENTS, AgentdClient, Event, ReplayReset, StreamItem

__all__ = ["AgentdClient", "AgentdError", "Event", "ReplayReset", "StreamItem", "TERMINAL_TURN_EVENTS"]
