import { EventSourceParserStream, type EventSourceMessage } from 'eventsource-parser/stream';
import { AgentdError } from './errors.ts';
import type { AgentdEvent, ReplayReset, StreamItem } from './event-types.ts';
import type { Transport } from './transport.ts';
import { abortableDelay, linkedController } from './timing.ts';

export interface EventsOptions {
  /** resume after this id (the last one you applied); absent: live events only */
  lastEventId?: number | null;
  /** only this session's events (ids and replay rules stay those of the whole stream) */
  sessionId?: string;
  signal?: AbortSignal;
  /** reconnect delays: doubling from initialMs up to maxMs, jittered (default 250 ms → 5 s) */
  backoff?: { initialMs?: number; maxMs?: number };
  /** no byte for this long (keep-alives come every 15 s) counts as a dropped connection; default 45 s */
  idleTimeoutMs?: number;
  /** each time a connection is established */
  onOpen?: () => void;
  /** each time a dropped connection is about to be retried */
  onReconnect?: (info: { attempt: number; delayMs: number; reason: unknown }) => void;
}

/** An async iterator of events that survives dropped connections; `close()` or the signal ends it. */
export interface EventSubscription extends AsyncIterableIterator<StreamItem> {
  /** the id of the last event handed out: persist it once you applied that event */
  readonly lastEventId: number | null;
  /**
   * Resolves once the first connection is open (it is asked for when the subscription is made):
   * every event published after that is delivered, so await it before submitting a turn whose
   * events you want from the start. Rejects when that first attempt fails (iterating retries it,
   * with backoff, or ends with the error retrying cannot fix).
   */
  readonly opened: Promise<void>;
  close(): void;
}

/**
 * GET /v1/events with reconnects: after a drop it waits (backoff, or Retry-After on 429/503) and
 * asks again with `Last-Event-ID`, and drops any id at or below the last one handed out, so no
 * event is yielded twice or out of order. Errors that retrying cannot fix (401, 400) end it.
 */
export function subscribeToEvents(transport: Transport, options: EventsOptions = {}): EventSubscription {
  const controller = linkedController(options.signal);
  let lastEventId = options.lastEventId ?? null;
  let afterReset = false;
  const initialMs = options.backoff?.initialMs ?? 250;
  const maxMs = options.backoff?.maxMs ?? 5_000;
  const idleTimeoutMs = options.idleTimeoutMs ?? 45_000;
  let markOpened: () => void = () => undefined;
  let failOpened: (reason: unknown) => void = () => undefined;
  const opened = new Promise<void>((resolve, reject) => {
    markOpened = resolve;
    failOpened = reject;
  });
  opened.catch(() => undefined);
  const onOpen = () => {
    markOpened();
    options.onOpen?.();
  };

  async function* run(): AsyncGenerator<StreamItem> {
    let attempt = 0;
    while (!controller.signal.aborted) {
      let reason: unknown;
      let retryAfterMs: number | null = null;
      try {
        const opening = firstConnection ?? openConnection();
        firstConnection = null;
        for await (const message of readMessages(opening)) {
          attempt = 0;
          if (message.event === 'replay.reset') {
            // After a gap the server's ids may lie below ours (another database): the next event
            // starts the order afresh. The old id is still sent on a reconnect before it comes.
            afterReset = true;
            yield { type: 'replay.reset', data: JSON.parse(message.data) as ReplayReset['data'] };
            continue;
          }
          const id = Number(message.id);
          if (!Number.isSafeInteger(id)) continue;
          if (lastEventId !== null && id <= lastEventId && !afterReset) continue;
          afterReset = false;
          const event = JSON.parse(message.data) as AgentdEvent;
          lastEventId = id;
          yield event;
        }
        reason = new Error('the event stream ended');
      } catch (error) {
        if (controller.signal.aborted) return;
        if (error instanceof AgentdError && !isRetryableStatus(error.status)) throw error;
        reason = error;
        if (error instanceof AgentdError && error.retryAfterSeconds !== null) retryAfterMs = error.retryAfterSeconds * 1000;
      }
      attempt += 1;
      const exponential = Math.min(maxMs, initialMs * 2 ** (attempt - 1));
      const delayMs = retryAfterMs ?? Math.round(exponential / 2 + (Math.random() * exponential) / 2);
      options.onReconnect?.({ attempt, delayMs, reason });
      if (!(await abortableDelay(delayMs, controller.signal))) return;
    }
  }

  interface Connection {
    messages: ReadableStreamDefaultReader<EventSourceMessage>;
    /** re-armed by every frame and keep-alive; its timeout drops the connection */
    armIdleTimer(): void;
    close(): void;
  }

  async function openConnection(): Promise<Connection> {
    const connection = linkedController(controller.signal);
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (lastEventId !== null) headers['last-event-id'] = String(lastEventId);
    const url = transport.urlOf('/v1/events', {}, { sessionId: options.sessionId });
    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    const armIdleTimer = () => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => connection.abort(new Error('the event stream went silent')), idleTimeoutMs);
    };
    const close = () => {
      clearTimeout(idleTimer);
      connection.abort();
    };
    try {
      armIdleTimer();
      const response = await transport.send('GET', url, { headers, signal: connection.signal });
      if (!response.ok) throw await AgentdError.fromResponse(response);
      if (!response.body) throw new Error('the event stream has no body');
      onOpen();
      const messages = response.body
        .pipeThrough(new TextDecoderStream())
        .pipeThrough(new EventSourceParserStream({ onComment: armIdleTimer }))
        .getReader();
      return { messages, armIdleTimer, close };
    } catch (error) {
      close();
      throw error;
    }
  }

  async function* readMessages(opening: Promise<Connection>): AsyncGenerator<EventSourceMessage> {
    const { messages, armIdleTimer, close } = await opening;
    try {
      for (;;) {
        const { done, value } = await messages.read();
        if (done) return;
        armIdleTimer();
        yield value;
      }
    } finally {
      messages.cancel().catch(() => undefined);
      close();
    }
  }

  // The first connection is asked for now, not at the first next(): a caller that subscribes and
  // then submits a turn gets the turn's events even if it starts iterating later.
  let firstConnection: Promise<Connection> | null = openConnection();
  firstConnection.then(undefined, (error: unknown) => failOpened(error));
  const iterator = run();
  const stop = () => {
    controller.abort();
    // A first connection never iterated holds an idle timer: close it too.
    void firstConnection?.then((connection) => connection.close(), () => undefined);
  };
  return {
    get lastEventId() {
      return lastEventId;
    },
    opened,
    next: () => iterator.next(),
    return: (value?: unknown) => {
      stop();
      return iterator.return(value as StreamItem);
    },
    throw: (error?: unknown) => iterator.throw(error),
    close: () => {
      stop();
      void iterator.return(undefined as unknown as StreamItem);
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
}

/** A dropped connection, a stopping server (503) or a subscriber limit (429) may pass; 4xx will not. */
function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}
