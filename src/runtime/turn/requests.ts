import { ApiError } from '../../domain/errors.ts';
import { normalizeUuid, nowIso, uuidv7 } from '../../domain/ids.ts';
import { publishedRequest, type HumanDecision, type HumanQuestion, type HumanRequestRecord } from '../../domain/human-request.ts';
import type { EventHub } from '../event-hub.ts';
import { NO_METRICS, type MetricsRecorder } from '../../telemetry/recorder.ts';

export const MAX_REQUEST_BYTES = 64 * 1024;
export const MAX_REQUEST_OPTIONS = 100;

interface PendingRequest {
  request: HumanRequestRecord;
  resolve(decision: HumanDecision): void;
  reject(error: Error): void;
}

/** Thrown to the waiting tool when its request can never be published or answered. */
export class HumanRequestRefused extends Error {}

/**
 * Human requests of one boundary: published as `request.created`, answered once with an advertised
 * option (CONTRACT.md §7). Pending requests live in memory; a restart fails their turns anyway.
 */
export class RequestBroker {
  private readonly pending = new Map<string, PendingRequest>();
  private readonly consumed = new Set<string>();

  constructor(
    private readonly hub: EventHub,
    /** agentd_human_requests_pending follows `pending` */
    private readonly metrics: MetricsRecorder = NO_METRICS,
  ) {}

  /**
   * Publishes a request and waits for its answer. A request over 64 KiB of JSON or 100 options is
   * never published: it fails closed with a `warning` event and HumanRequestRefused.
   */
  ask(question: HumanQuestion, onWaiting: () => void): Promise<HumanDecision> {
    const { sessionId, turnId, kind, options } = question;
    const request: HumanRequestRecord = { id: uuidv7(), ...question, createdAt: nowIso() };
    const published = publishedRequest(request);
    const size = Buffer.byteLength(JSON.stringify(published));
    if (options.length > MAX_REQUEST_OPTIONS || size > MAX_REQUEST_BYTES) {
      const why = options.length > MAX_REQUEST_OPTIONS ? `${options.length} options (limit ${MAX_REQUEST_OPTIONS})` : `${size} bytes (limit ${MAX_REQUEST_BYTES})`;
      this.hub.emitText('warning', sessionId, turnId, `a ${kind} request was refused before publishing: ${why}`);
      return Promise.reject(new HumanRequestRefused(`the ${kind} request is too large to show a human (${why}); the call was refused`));
    }
    return new Promise<HumanDecision>((resolve, reject) => {
      this.pending.set(request.id, { request, resolve, reject });
      this.metrics.humanRequestOpened();
      onWaiting();
      this.hub.emit('request.created', sessionId, turnId, published);
    });
  }

  list(turnId: string | null): HumanRequestRecord[] {
    const requests = [...this.pending.values()].map((entry) => entry.request).filter((request) => turnId === null || request.turnId === turnId);
    return requests.reverse().slice(0, 200);
  }

  resolve(rawId: string, decision: string, value: string | undefined): HumanRequestRecord {
    const id = normalizeUuid(rawId);
    const entry = id ? this.pending.get(id) : undefined;
    if (!entry) {
      if (id && this.consumed.has(id)) throw new ApiError('request_already_resolved', 'this request was already resolved');
      throw new ApiError('request_not_found', 'no such request');
    }
    if (!entry.request.options.includes(decision)) {
      throw new ApiError('invalid_decision', `decision must be one of: ${entry.request.options.join(', ')}`);
    }
    this.settle(entry.request.id);
    this.hub.emit('request.resolved', entry.request.sessionId, entry.request.turnId, { requestId: entry.request.id });
    entry.resolve(value === undefined ? { decision } : { decision, value });
    return entry.request;
  }

  /** Withdraws every pending request of a turn (cancel); the waiting tools see `error`. */
  cancelTurn(turnId: string, error: Error): void {
    for (const entry of [...this.pending.values()]) {
      if (entry.request.turnId !== turnId) continue;
      this.settle(entry.request.id);
      this.hub.emit('request.resolved', entry.request.sessionId, turnId, { requestId: entry.request.id });
      entry.reject(error);
    }
  }

  hasPending(turnId: string): boolean {
    for (const entry of this.pending.values()) if (entry.request.turnId === turnId) return true;
    return false;
  }

  private settle(id: string): void {
    if (this.pending.delete(id)) this.metrics.humanRequestClosed();
    this.consumed.add(id);
    // Remember consumed ids for the 409, but bounded.
    if (this.consumed.size > 10_000) this.consumed.delete(this.consumed.values().next().value!);
  }
}
