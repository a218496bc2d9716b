import { AgentdError } from './errors.ts';
import { isReplayReset, TERMINAL_TURN_EVENTS } from './event-types.ts';
import { subscribeToEvents } from './event-stream.ts';
import type { CreateTurn, Turn, TurnResult } from './generated/operations.ts';
import { abortableDelay, linkedController } from './timing.ts';
import type { OperationMethods, Transport } from './transport.ts';

export interface SubmitTurnOptions {
  signal?: AbortSignal;
  /** how many times a lost response is retried (default 5; waits double from 200 ms up to 5 s) */
  retries?: number;
}

const MAX_RETRY_WAIT_MS = 5_000;

/**
 * POST /v1/sessions/:id/turns with a `clientRequestId` chosen here (or given) and kept across
 * retries: after a lost response (network error, 5xx without an error envelope) or a 503 the same
 * request is sent again, which the server treats as the same admission (SPEC.md §4 rules 2 and 5),
 * so the answer is the one turn whether or not the first attempt got through.
 */
export async function submitTurn(methods: OperationMethods, sessionId: string, turn: CreateTurn | string, options: SubmitTurnOptions = {}): Promise<Turn> {
  const body: CreateTurn = typeof turn === 'string' ? { input: turn } : { ...turn };
  body.clientRequestId ??= globalThis.crypto.randomUUID();
  const retries = options.retries ?? 5;
  for (let attempt = 0; ; attempt++) {
    try {
      return await methods.createTurn({ path: { id: sessionId }, body, signal: options.signal });
    } catch (error) {
      if (options.signal?.aborted || attempt >= retries || !isLostResponse(error)) throw attachClientRequestId(error, body.clientRequestId);
      const waitMs = error instanceof AgentdError && error.retryAfterSeconds !== null ? error.retryAfterSeconds * 1000 : Math.min(MAX_RETRY_WAIT_MS, 200 * 2 ** attempt);
      if (!(await abortableDelay(waitMs, options.signal))) throw attachClientRequestId(error, body.clientRequestId);
    }
  }
}

/** The outcome of the request is unknown (or the server asked to come back): sending it again is safe. */
export function isLostResponse(error: unknown): boolean {
  if (error instanceof AgentdError) return error.status === 503 || (error.status >= 500 && !error.hasEnvelope);
  return error instanceof TypeError; // fetch's network failure
}

/** So a caller that gives up can retry later with the same id. */
function attachClientRequestId(error: unknown, clientRequestId: string): unknown {
  if (typeof error === 'object' && error !== null) Object.assign(error, { clientRequestId });
  return error;
}

export interface WaitForTurnOptions {
  signal?: AbortSignal;
  /**
   * the pause between two reads of the result besides the events (default 2 s; 250 ms when events
   * fail); each read is held by the server until the turn ends, for up to POLL_WAIT_SECONDS
   */
  pollIntervalMs?: number;
}

/** Each read of the result waits this long on the server for the turn's end (`?wait=`, CONTRACT.md §24). */
const POLL_WAIT_SECONDS = 30;

/**
 * Resolves with the TurnResult once the turn is terminal. It listens to the session's events and
 * fetches the result on the turn's terminal event (or a replay.reset); GET /v1/turns/:id/result is
 * also read with `?wait=`, which the server holds until the turn ends (409 `turn_not_terminal` when
 * the wait runs out first), and read again sooner when no event stream can be had.
 */
export async function waitForTurn(methods: OperationMethods, transport: Transport, turnId: string, options: WaitForTurnOptions = {}): Promise<TurnResult> {
  const controller = linkedController(options.signal);
  const resultIfTerminal = async (waitSeconds = 0): Promise<TurnResult | null> => {
    try {
      return await methods.getTurnResult({ path: { id: turnId }, query: waitSeconds > 0 ? { wait: waitSeconds } : {}, signal: controller.signal });
    } catch (error) {
      if (error instanceof AgentdError && error.code === 'turn_not_terminal') return null;
      throw error;
    }
  };
  const { sessionId } = await methods.getTurn({ path: { id: turnId }, signal: controller.signal });
  let eventsFailed = false;
  let pollNow: () => void = () => undefined;

  const viaEvents = async (): Promise<TurnResult | null> => {
    const stream = subscribeToEvents(transport, { sessionId, signal: controller.signal, onOpen: () => pollNow() });
    try {
      for await (const item of stream) {
        const relevant = isReplayReset(item) || (item.turnId === turnId && TERMINAL_TURN_EVENTS.has(item.type));
        if (!relevant) continue;
        const result = await resultIfTerminal();
        if (result) return result;
      }
    } catch (error) {
      if (controller.signal.aborted) return null;
      eventsFailed = true;
      pollNow();
    }
    return null;
  };

  const viaPolling = async (): Promise<TurnResult | null> => {
    for (;;) {
      const result = await resultIfTerminal(POLL_WAIT_SECONDS);
      if (result) return result;
      const interval = eventsFailed ? 250 : (options.pollIntervalMs ?? 2_000);
      const woken = new Promise<boolean>((resolve) => (pollNow = () => resolve(true)));
      const slept = await Promise.race([abortableDelay(interval, controller.signal), woken]);
      if (!slept || controller.signal.aborted) return null;
    }
  };

  try {
    const winner = await Promise.race([viaEvents().then((result) => result ?? new Promise<never>(() => undefined)), viaPolling()]);
    if (!winner) throw options.signal?.reason ?? new Error('waitForTurn was aborted');
    return winner;
  } finally {
    controller.abort();
  }
}
