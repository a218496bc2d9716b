import type { EventEnvelope } from './generated/operations.ts';

/**
 * An ordinary event of GET /v1/events: the envelope with the payload of its type, as the server's
 * event catalogue declares it (generated from /openapi.json, one branch per type, so `type`
 * narrows `data`). Unknown event names may arrive from a newer server; SPEC.md §6 asks clients to
 * ignore them.
 */
export type AgentdEvent = EventEnvelope;

export type AgentdEventType = AgentdEvent['type'];

/** The event of one type, e.g. `EventOfType<'request.created'>`. */
export type EventOfType<Type extends AgentdEventType> = Extract<AgentdEvent, { type: Type }>;

/**
 * The control event: the stream skipped events (retention, a slow consumer, a restarted server).
 * It has no id. Discard incremental state and refetch sessions, turns and requests.
 */
export interface ReplayReset {
  type: 'replay.reset';
  data: { reason: string; refetch: boolean };
}

export type StreamItem = AgentdEvent | ReplayReset;

export function isReplayReset(item: StreamItem): item is ReplayReset {
  return item.type === 'replay.reset';
}

export const TERMINAL_TURN_EVENTS: ReadonlySet<string> = new Set(['turn.completed', 'turn.failed', 'turn.cancelled']);
