import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { ApiError } from '../domain/errors.ts';
import { KEEP_ALIVE_FRAME, type EventLog } from '../events/event-log.ts';
import type { FrameBatch } from '../events/frame-batch.ts';

const KEEP_ALIVE_MS = 15_000;

/**
 * Counts SSE connections against the global and per-boundary limits (CONTRACT.md §6), and knows
 * the open streams so a stopping server can end them instead of waiting for clients to leave.
 */
export class SubscriberLimits {
  private global = 0;
  /** each open stream, with the batch its frames are held in (its boundary's event log's) */
  private readonly streams = new Map<ServerResponse, FrameBatch>();
  private readonly perBoundary = new Map<string, number>();

  constructor(
    private readonly maxGlobal: number,
    /** null in single-user mode: the one boundary is bounded by the global limit only */
    private readonly maxPerBoundary: number | null,
  ) {}

  /** open event streams of every boundary, for agentd_event_subscribers */
  get count(): number {
    return this.global;
  }

  track(response: ServerResponse, frames: FrameBatch): void {
    this.streams.set(response, frames);
    response.once('close', () => this.streams.delete(response));
  }

  /**
   * Ends every stream and closes its connection: the client sees the stream end and reconnects
   * (to a restarted server), and the socket cannot linger as an idle keep-alive connection.
   */
  endAll(): void {
    for (const [response, frames] of this.streams) {
      frames.release(response);
      response.end(() => response.socket?.destroySoon());
    }
  }

  acquire(boundaryId: string): () => void {
    if (this.global >= this.maxGlobal) throw new ApiError('event_subscriber_limit', 'too many event subscribers');
    const current = this.perBoundary.get(boundaryId) ?? 0;
    if (this.maxPerBoundary !== null && current >= this.maxPerBoundary) {
      throw new ApiError('tenant_event_subscriber_limit', 'too many event subscribers for this tenant');
    }
    this.global++;
    this.perBoundary.set(boundaryId, current + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.global--;
      const left = (this.perBoundary.get(boundaryId) ?? 1) - 1;
      if (left === 0) this.perBoundary.delete(boundaryId);
      else this.perBoundary.set(boundaryId, left);
    };
  }
}

export interface StreamOptions {
  lastEventId: number | null;
  /** only this session's events; null: every event of the boundary */
  sessionId: string | null;
}

/**
 * GET /v1/events: replay after Last-Event-ID, then live frames. The response is taken over from
 * Fastify; a keep-alive comment goes out after 15 s without a frame.
 */
export function streamEvents(reply: FastifyReply, options: StreamOptions, log: EventLog, subscribers: SubscriberLimits, release: () => void, keepAliveMs = KEEP_ALIVE_MS): void {
  reply.hijack();
  const response = reply.raw;
  const headers: Record<string, string> = {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'x-accel-buffering': 'no',
    connection: 'keep-alive',
  };
  for (const [name, value] of Object.entries(reply.getHeaders())) if (typeof value === 'string') headers[name] = value;
  response.writeHead(200, headers);
  response.flushHeaders();
  subscribers.track(response, log.frameBatch);

  // A keep-alive comment goes out after keepAliveMs without a frame; each frame pushes it back
  // by refreshing the one timer rather than replacing it.
  const keepAlive = setTimeout(function sendKeepAlive() {
    response.write(KEEP_ALIVE_FRAME);
    keepAlive.refresh();
  }, keepAliveMs);
  const subscription = log.subscribe(options.lastEventId, {
    write(frame) {
      keepAlive.refresh();
      return log.frameBatch.write(response, frame);
    },
    onDrain(resume) {
      response.once('drain', resume);
    },
  }, { sessionId: options.sessionId });
  response.on('close', () => {
    clearTimeout(keepAlive);
    subscription.close();
    release();
  });
}

