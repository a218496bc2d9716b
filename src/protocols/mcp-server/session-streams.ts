import type { AgentdClient, EventSubscription, StreamItem } from '../../client/index.ts';

/** How long a session's event stream stays open with nobody following it: the next call reuses it. */
const IDLE_MS = 30_000;

/**
 * One event stream per agentd session for an MCP session, shared by its tool calls and kept open
 * between them (opening GET /v1/events for every `start_turn` doubled a turn's server CPU,
 * docs/BENCHMARKS.md). A call takes a tap: every event of the session from the moment the tap is
 * made, in order, until it closes the tap.
 */
export class SessionStreams {
  private readonly streams = new Map<string, SharedStream>();

  constructor(private readonly client: AgentdClient) {}

  async tap(sessionId: string): Promise<Tap> {
    let stream = this.streams.get(sessionId);
    if (!stream) {
      stream = new SharedStream(this.client.events({ sessionId }), () => this.streams.delete(sessionId));
      this.streams.set(sessionId, stream);
    }
    return stream.tap();
  }

  close(): void {
    for (const stream of this.streams.values()) stream.close();
    this.streams.clear();
  }
}

class SharedStream {
  private readonly taps = new Set<Tap>();
  private idle: NodeJS.Timeout | null = null;

  constructor(
    private readonly subscription: EventSubscription,
    private readonly forget: () => void,
  ) {
    void this.pump();
  }

  async tap(): Promise<Tap> {
    if (this.idle) clearTimeout(this.idle);
    this.idle = null;
    const tap = new Tap(() => this.untap(tap));
    this.taps.add(tap);
    await this.subscription.opened;
    return tap;
  }

  close(): void {
    this.subscription.close();
    for (const tap of this.taps) tap.end();
    this.taps.clear();
  }

  private untap(tap: Tap): void {
    this.taps.delete(tap);
    if (this.taps.size === 0) this.idle = setTimeout(() => this.retire(), IDLE_MS).unref();
  }

  private retire(): void {
    this.forget();
    this.close();
  }

  private async pump(): Promise<void> {
    try {
      for await (const item of this.subscription) for (const tap of this.taps) tap.push(item);
    } catch {
      // a stream that cannot go on (the token no longer valid): its taps end, the next call opens another
    }
    this.forget();
    for (const tap of this.taps) tap.end();
  }
}

/** The events of one call, queued until it reads them; iteration ends when the stream does. */
export class Tap implements AsyncIterable<StreamItem> {
  private readonly queue: StreamItem[] = [];
  private wake: (() => void) | null = null;
  private ended = false;

  constructor(private readonly onClose: () => void) {}

  push(item: StreamItem): void {
    this.queue.push(item);
    this.wake?.();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  close(): void {
    this.end();
    this.onClose();
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<StreamItem> {
    for (;;) {
      const item = this.queue.shift();
      if (item !== undefined) {
        yield item;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = null;
    }
  }
}
