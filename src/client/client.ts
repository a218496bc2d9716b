import { subscribeToEvents, type EventsOptions, type EventSubscription } from './event-stream.ts';
import type { CreateTurn, Turn, TurnResult } from './generated/operations.ts';
import { submitTurn, waitForTurn, type SubmitTurnOptions, type WaitForTurnOptions } from './turn-helpers.ts';
import { operationMethods, Transport, type ClientOptions, type OperationMethods } from './transport.ts';

export interface AgentdClient extends OperationMethods {
  readonly baseUrl: string;
  /** GET /v1/events as a resumable async iterator (see EventsOptions) */
  events(options?: EventsOptions): EventSubscription;
  /** createTurn with a kept clientRequestId, retried after a lost response */
  submitTurn(sessionId: string, turn: CreateTurn | string, options?: SubmitTurnOptions): Promise<Turn>;
  /**
   * submitTurn with `steer`: the input joins the session's active turn, before its next model
   * request (`delivery: "steered"`), or is a turn of its own when none is active (`"queued"`)
   */
  steerTurn(sessionId: string, turn: CreateTurn | string, options?: SubmitTurnOptions): Promise<Turn>;
  /** the TurnResult once the turn is terminal (events, with polling as the fallback) */
  waitForTurn(turnId: string, options?: WaitForTurnOptions): Promise<TurnResult>;
}

/** A typed client of one agentd server: one method per operationId of /openapi.json, plus helpers. */
export function createClient(options: ClientOptions): AgentdClient {
  const transport = new Transport(options);
  const methods = operationMethods(transport);
  return {
    ...methods,
    baseUrl: transport.baseUrl,
    events: (eventsOptions) => subscribeToEvents(transport, eventsOptions),
    submitTurn: (sessionId, turn, submitOptions) => submitTurn(methods, sessionId, turn, submitOptions),
    steerTurn: (sessionId, turn, submitOptions) => submitTurn(methods, sessionId, { ...(typeof turn === 'string' ? { input: turn } : turn), steer: true }, submitOptions),
    waitForTurn: (turnId, waitOptions) => waitForTurn(methods, transport, turnId, waitOptions),
  };
}
