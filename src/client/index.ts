/**
 * agentd/client: a typed client of the agentd HTTP API for Node 20+ and browsers (fetch only; no
 * server code at run time). Types come from the server's own schemas (generated/operations.ts).
 */
export { createClient, type AgentdClient } from './client.ts';
export { AgentdError } from './errors.ts';
export { isReplayReset, TERMINAL_TURN_EVENTS, type AgentdEvent, type AgentdEventType, type EventOfType, type ReplayReset, type StreamItem } from './event-types.ts';
export type { EventsOptions, EventSubscription } from './event-stream.ts';
export { isLostResponse, type SubmitTurnOptions, type WaitForTurnOptions } from './turn-helpers.ts';
export type { ClientOptions, OperationArgs, OperationId, OperationMethods, OperationResponse } from './transport.ts';
export type * from './generated/operations.ts';
export { OPERATION_ROUTES } from './generated/operations.ts';
