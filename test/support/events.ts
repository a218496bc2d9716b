import { request as httpRequest, type IncomingMessage } from 'node:http';
import { EventSource } from 'eventsource';

export interface ReceivedEvent {
  id: string;
  type: string;
  data: any;
}

/**
 * A real SSE client (the `eventsource` package) that records every event it receives, including
 * `replay.reset`, and can wait for an event matching a predicate.
 */
export class EventRecorder {
  readonly events: ReceivedEvent[] = [];
  readonly source: EventSource;
  private waiters: { test: (event: ReceivedEvent) => boolean; resolve: (event: ReceivedEvent) => void }[] = [];
  readonly opened: Promise<void>;

  constructor(url: string, options: { lastEventId?: number; headers?: Record<string, string>; /** e.g. `sessionId=…` */ query?: string } = {}) {
    const extra: Record<string, string> = { ...options.headers };
    if (options.lastEventId !== undefined) extra['last-event-id'] = String(options.lastEventId);
    this.source = new EventSource(`${url}/v1/events${options.query ? `?${options.query}` : ''}`, {
      fetch: (input, init) => fetch(input, { ...init, headers: { ...(init?.headers as Record<string, string>), ...extra } }),
    });
    this.opened = new Promise((resolve, reject) => {
      this.source.addEventListener('open', () => resolve(), { once: true });
      this.source.addEventListener('error', (error) => reject(error), { once: true });
    });
    const originalDispatch = this.source.dispatchEvent.bind(this.source);
    this.source.dispatchEvent = (event: Event) => {
      const message = event as MessageEvent;
      if (typeof message.data === 'string') this.record({ id: message.lastEventId, type: event.type, data: JSON.parse(message.data) });
      return originalDispatch(event);
    };
  }

  private record(event: ReceivedEvent): void {
    this.events.push(event);
    this.waiters = this.waiters.filter((waiter) => {
      if (!waiter.test(event)) return true;
      waiter.resolve(event);
      return false;
    });
  }

  waitFor(test: (event: ReceivedEvent) => boolean, timeoutMs = 10_000): Promise<ReceivedEvent> {
    const existing = this.events.find(test);
    if (existing) return Promise.resolve(existing);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching event within ${timeoutMs} ms; got ${this.events.map((event) => event.type).join(', ')}`)), timeoutMs);
      this.waiters.push({ test, resolve: (event) => (clearTimeout(timer), resolve(event)) });
    });
  }

  waitForType(type: string, turnId?: string, timeoutMs?: number): Promise<ReceivedEvent> {
    return this.waitFor((event) => event.type === type && (turnId === undefined || event.data.turnId === turnId), timeoutMs);
  }

  ofTurn(turnId: string): ReceivedEvent[] {
    return this.events.filter((event) => event.data?.turnId === turnId);
  }

  close(): void {
    this.source.close();
  }
}

/** Opens `<url>/v1/events` with a plain HTTP client, which a test can pause: a subscriber that stops reading. */
export function openRawEventStream(url: string, headers: Record<string, string> = {}): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/v1/events`, { headers }, resolve);
    req.on('error', reject);
    req.end();
  });
}

/** Resumes a paused raw stream and reads it until `until` arrives (at most 10 s), then closes it; returns the text. */
export async function drainRawEventStream(stream: IncomingMessage, until: string): Promise<string> {
  let text = '';
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => (text += chunk));
  stream.resume();
  const deadline = Date.now() + 10_000;
  while (!text.includes(until) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  stream.destroy();
  return text;
}
