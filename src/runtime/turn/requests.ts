import { ApiError } from '../../domain/errors.ts';
import { normalizeUuid, nowIso, uuidv7 } from '../../domain/ids.ts';
import { publishedRequest, type HumanDecision, type HumanQuestion, type HumanRequestRecord } from '../../domain/human-request.ts';
import type { EventHub } from '../event-hub.ts';
import { NO_METRICS, type MetricsRecorder } from '../../telemetry/recorder.ts';
import type { Db } from '../../store/database.ts';
import { answersAmong, insertHumanRequest, listPendingRequests, resolveHumanRequest, withdrawHumanRequests } from '../../store/human-requests.ts';
import type { ClusterDuties, Duty } from '../cluster-supervisor.ts';
import type { Logger } from 'pino';
import type { BoundaryWebhooks } from '../webhooks/webhook-outbox.ts';
import { claimLostOf } from './claim-lost.ts';

export const MAX_REQUEST_BYTES = 64 * 1024;
export const MAX_REQUEST_OPTIONS = 100;

/** Refuses an answer the asker cannot take (422 invalid_decision with the reason); null takes it. */
export type DecisionCheck = (answer: HumanDecision) => string | null;

interface PendingRequest {
  request: HumanRequestRecord;
  check?: DecisionCheck;
  resolve(decision: HumanDecision): void;
  reject(error: Error): void;
}

/** Thrown to the waiting tool when its request can never be published or answered. */
export class HumanRequestRefused extends Error {}

/**
 * --cluster: the requests of the boundary are rows too (store/human-requests.ts), so any instance
 * lists and answers them; the turn's owner looks for the answers to its own when another instance
 * rings that it gave one, and at the supervisor's poll in case a ring was lost.
 */
export interface SharedRequests {
  db: Db;
  boundaryId: string;
  /** the fencing number the turn runs under here; a request is stored only under it */
  attemptOf(turnId: string): number | undefined;
  logger: Logger;
  /** the instance's supervisor, for this boundary */
  duties: ClusterDuties;
}

/**
 * Human requests of one boundary: published as `request.created`, answered once with an advertised
 * option (CONTRACT.md §7). The waiting tools live in memory: without --cluster a restart fails their
 * turns anyway; with it, the requests are shared through the database (SharedRequests).
 */
export class RequestBroker {
  private readonly pending = new Map<string, PendingRequest>();
  private readonly consumed = new Set<string>();
  /** --cluster: per turn taken over while it waited, the request its former owner waited on (adopt) */
  private readonly adoptable = new Map<string, { request: HumanRequestRecord; answer: HumanDecision | null }>();
  /** --cluster: looks for answers given on other instances while requests wait here */
  private readonly answers: Duty | null;

  constructor(
    private readonly hub: EventHub,
    /** agentd_human_requests_pending follows `pending` */
    private readonly metrics: MetricsRecorder = NO_METRICS,
    private readonly shared: SharedRequests | null = null,
    /** --webhook-url: each request is announced by webhook before it is published */
    private readonly webhooks: BoundaryWebhooks | null = null,
    private readonly logger: Logger | null = null,
  ) {
    this.answers = shared?.duties.add({ name: 'request answers', wokenBy: ['answer'], run: () => this.lookForAnswers(shared) }) ?? null;
  }

  /**
   * Publishes a request and waits for its answer. A request over 64 KiB of JSON or 100 options is
   * never published: it fails closed with a `warning` event and HumanRequestRefused.
   */
  ask(question: HumanQuestion, onWaiting: () => void, signal?: AbortSignal, check?: DecisionCheck): Promise<HumanDecision> {
    const { sessionId, turnId, kind, options } = question;
    const adopted = this.takeAdoptable(question);
    if (adopted) return this.rejoin(adopted.request, adopted.answer, onWaiting);
    const request: HumanRequestRecord = { id: uuidv7(), ...question, createdAt: nowIso() };
    const published = publishedRequest(request);
    const size = Buffer.byteLength(JSON.stringify(published));
    if (options.length > MAX_REQUEST_OPTIONS || size > MAX_REQUEST_BYTES) {
      const why = options.length > MAX_REQUEST_OPTIONS ? `${options.length} options (limit ${MAX_REQUEST_OPTIONS})` : `${size} bytes (limit ${MAX_REQUEST_BYTES})`;
      this.hub.emitText('warning', sessionId, turnId, `a ${kind} request was refused before publishing: ${why}`);
      return Promise.reject(new HumanRequestRefused(`the ${kind} request is too large to show a human (${why}); the call was refused`));
    }
    const publish = () =>
      new Promise<HumanDecision>((resolve, reject) => {
        this.pending.set(request.id, { request, check, resolve, reject });
        this.metrics.humanRequestOpened();
        onWaiting();
        this.hub.emit('request.created', sessionId, turnId, published);
      });
    const outbox = this.webhooks?.write({ type: 'request.created', at: request.createdAt, sessionId, turnId, data: published }) ?? null;
    if (!this.shared) {
      if (!outbox) return publish();
      return this.announced(outbox).then(() => {
        if (signal?.aborted) throw new HumanRequestRefused('the turn was cancelled');
        return publish();
      });
    }
    // Stored before anyone can see it, so that every instance can answer it once it is published.
    const { db, boundaryId, attemptOf } = this.shared;
    const store = (trx: Db) => insertHumanRequest(trx, boundaryId, request, attemptOf(turnId) ?? 0);
    const stored = outbox
      ? db.transaction().execute(async (trx) => {
          await store(trx);
          await outbox(trx);
        })
      : store(db);
    // a turn taken over meanwhile: the fence refused the row, and the turn ends as its claim does
    return stored.catch((error: unknown) => Promise.reject(claimLostOf(error))).then(() => {
      if (outbox) this.webhooks!.committed();
      if (signal?.aborted) {
        void withdrawHumanRequests(db, turnId).catch(() => {});
        throw new HumanRequestRefused('the turn was cancelled');
      }
      return publish();
    });
  }

  /**
   * Outside a cluster a request is stored nowhere else: its deliveries are a transaction of their
   * own, before it is published. A database that cannot take them does not keep the human from
   * the question (the stream still shows it); the log says the webhook was lost.
   */
  private async announced(outbox: (trx: Db) => Promise<void>): Promise<void> {
    try {
      await outbox(this.webhooks!.db);
      this.webhooks!.committed();
    } catch (error) {
      this.logger?.error({ err: { message: (error as Error).message } }, 'could not store the webhook deliveries of a human request; it is published without them');
    }
  }

  /**
   * A turn taken over while it waited (CONTRACT.md §18): when its resumed call asks the same
   * question again, it waits for this request, already published and perhaps answered meanwhile,
   * instead of asking anew.
   */
  adopt(request: HumanRequestRecord, answer: HumanDecision | null): void {
    this.adoptable.set(request.turnId, { request, answer });
  }

  /** The turn ended: a request it adopted and never asked again is withdrawn. */
  forgetAdopted(turnId: string): void {
    if (!this.adoptable.delete(turnId) || !this.shared) return;
    void withdrawHumanRequests(this.shared.db, turnId).catch(() => {});
  }

  private takeAdoptable(question: HumanQuestion): { request: HumanRequestRecord; answer: HumanDecision | null } | null {
    const adoptable = this.adoptable.get(question.turnId);
    if (!adoptable) return null;
    this.adoptable.delete(question.turnId);
    const { request } = adoptable;
    const same = request.agentId === question.agentId && request.kind === question.kind && request.prompt === question.prompt && JSON.stringify(request.options) === JSON.stringify(question.options);
    if (same) return adoptable;
    // another question: the old one can no longer be answered usefully
    if (this.shared) void withdrawHumanRequests(this.shared.db, question.turnId).catch(() => {});
    return null;
  }

  /** Waits for an adopted request: its answer at once when it has one, else as for a request asked here (without publishing it again). */
  private rejoin(request: HumanRequestRecord, answer: HumanDecision | null, onWaiting: () => void): Promise<HumanDecision> {
    if (answer) {
      this.consumed.add(request.id);
      this.hub.emit('request.resolved', request.sessionId, request.turnId, { requestId: request.id });
      return Promise.resolve(answer);
    }
    return new Promise<HumanDecision>((resolve, reject) => {
      this.pending.set(request.id, { request, resolve, reject });
      this.metrics.humanRequestOpened();
      // answered while its former owner was gone: found at once
      this.answers?.wake();
      onWaiting();
    });
  }

  async list(turnId: string | null): Promise<HumanRequestRecord[]> {
    if (this.shared) return listPendingRequests(this.shared.db, this.shared.boundaryId, turnId);
    const requests = [...this.pending.values()].map((entry) => entry.request).filter((request) => turnId === null || request.turnId === turnId);
    return requests.reverse().slice(0, 200);
  }

  async resolve(rawId: string, decision: string, value: string | undefined): Promise<HumanRequestRecord> {
    if (this.shared) return this.resolveShared(this.shared, rawId, value === undefined ? { decision } : { decision, value });
    const id = normalizeUuid(rawId);
    const entry = id ? this.pending.get(id) : undefined;
    if (!entry) {
      if (id && this.consumed.has(id)) throw new ApiError('request_already_resolved', 'this request was already resolved');
      throw new ApiError('request_not_found', 'no such request');
    }
    if (!entry.request.options.includes(decision)) {
      throw new ApiError('invalid_decision', `decision must be one of: ${entry.request.options.join(', ')}`);
    }
    const answer = value === undefined ? { decision } : { decision, value };
    refuseUnfit(entry, answer);
    this.answer(entry, answer);
    return entry.request;
  }

  /** Withdraws every pending request of a turn (cancel); the waiting tools see `error`. */
  cancelTurn(turnId: string, error: Error): void {
    if (this.shared) void withdrawHumanRequests(this.shared.db, turnId).catch(() => {});
    for (const entry of [...this.pending.values()]) {
      if (entry.request.turnId !== turnId) continue;
      this.settle(entry.request.id);
      this.hub.emit('request.resolved', entry.request.sessionId, turnId, { requestId: entry.request.id });
      entry.reject(error);
    }
  }

  /**
   * The turn is no longer this instance's (taken over, lost, handed over): its waiting tools see
   * `error`; its requests stay as they are in the database, for the instance that has the turn.
   */
  letGo(turnId: string, error: Error): void {
    this.adoptable.delete(turnId);
    for (const entry of [...this.pending.values()]) {
      if (entry.request.turnId !== turnId) continue;
      if (this.pending.delete(entry.request.id)) this.metrics.humanRequestClosed();
      entry.reject(error);
    }
  }

  hasPending(turnId: string): boolean {
    for (const entry of this.pending.values()) if (entry.request.turnId === turnId) return true;
    return false;
  }

  /** The first answer wins on whichever instance it came to; the owner acts on it here or at its next poll. */
  private async resolveShared(shared: SharedRequests, rawId: string, answer: HumanDecision): Promise<HumanRequestRecord> {
    const id = normalizeUuid(rawId);
    // Checked where the asker is; an answer given on another instance is checked by the asker itself.
    const local = id ? this.pending.get(id) : undefined;
    if (local && local.request.options.includes(answer.decision)) refuseUnfit(local, answer);
    const outcome = id ? await resolveHumanRequest(shared.db, shared.boundaryId, id, answer) : ({ kind: 'not_found' } as const);
    switch (outcome.kind) {
      case 'not_found':
        if (id && this.consumed.has(id)) throw new ApiError('request_already_resolved', 'this request was already resolved');
        throw new ApiError('request_not_found', 'no such request');
      case 'already_resolved':
        throw new ApiError('request_already_resolved', 'this request was already resolved');
      case 'invalid_decision':
        throw new ApiError('invalid_decision', `decision must be one of: ${outcome.options.join(', ')}`);
      case 'resolved': {
        const entry = this.pending.get(outcome.request.id);
        if (entry) this.answer(entry, answer);
        // the turn waits on another instance: its owner looks now
        else shared.duties.ring('answer');
        return outcome.request;
      }
    }
  }

  private answer(entry: PendingRequest, decision: HumanDecision): void {
    this.settle(entry.request.id);
    this.hub.emit('request.resolved', entry.request.sessionId, entry.request.turnId, { requestId: entry.request.id });
    entry.resolve(decision);
  }

  /** --cluster: answers given on other instances to the requests waiting here (nothing is asked while none waits). */
  private async lookForAnswers(shared: SharedRequests): Promise<void> {
    if (this.pending.size === 0) return;
    try {
      for (const [id, decision] of await answersAmong(shared.db, [...this.pending.keys()])) {
        const entry = this.pending.get(id);
        if (entry) this.answer(entry, decision);
      }
    } catch (error) {
      shared.logger.debug({ err: error }, 'could not look for answers to human requests');
    }
  }

  /** Stops looking for answers given elsewhere (the boundary closes). */
  stop(): void {
    this.answers?.stop();
  }

  private settle(id: string): void {
    if (this.pending.delete(id)) this.metrics.humanRequestClosed();
    this.consumed.add(id);
    // Remember consumed ids for the 409, but bounded.
    if (this.consumed.size > 10_000) this.consumed.delete(this.consumed.values().next().value!);
  }
}

function refuseUnfit(entry: PendingRequest, answer: HumanDecision): void {
  const refusal = entry.check?.(answer);
  if (refusal) throw new ApiError('invalid_decision', refusal);
}
