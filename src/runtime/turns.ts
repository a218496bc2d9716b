import type { Logger } from 'pino';
import { ApiError } from '../domain/errors.ts';
import { normalizeUuid, nowIso, uuidv7 } from '../domain/ids.ts';
import type { CreateTurnBody, TurnDto } from '../api/schemas.ts';
import * as turnsTable from '../store/turns.ts';
import type { TurnRecord } from '../store/turns.ts';
import { decodeAttachments, inputDigest, type DecodedAttachments } from '../workspace/attachments.ts';
import type { SessionRecord } from '../store/sessions.ts';
import type { Boundary } from './boundary.ts';
import type { EventHub } from './event-hub.ts';
import type { Scheduler, Job } from './scheduler.ts';
import type { SessionService } from './sessions.ts';
import { TerminalTurnCache } from './terminal-cache.ts';

/** A turn between admission and its terminal state. */
export interface ActiveTurn extends Job {
  record: TurnRecord;
  session: SessionRecord;
  attachments: DecodedAttachments;
  abort: AbortController;
  started: boolean;
  /** settles when the turn is terminal and durable */
  finished: Promise<void>;
  markFinished(): void;
}

/** Executes an admitted turn to its terminal state (the turn runner). */
export type TurnExecutor = (turn: ActiveTurn) => Promise<void>;

/** Turn admission, idempotency, lookup and cancel (CONTRACT.md §5). */
export class TurnService {
  private readonly activeBySession = new Map<string, ActiveTurn>();
  private readonly activeById = new Map<string, ActiveTurn>();
  readonly terminal = new TerminalTurnCache(1000);
  executor: TurnExecutor = async () => {
    throw new Error('no turn executor installed');
  };

  constructor(
    private readonly boundary: Boundary,
    private readonly sessions: SessionService,
    private readonly hub: EventHub,
    private readonly scheduler: Scheduler<ActiveTurn>,
    private readonly logger: Logger,
  ) {}

  /** Whether this process still holds the turn's in-memory state (active or among the newest terminal). */
  holds(id: string): boolean {
    return this.activeById.has(id) || this.terminal.get(id) !== undefined;
  }

  isBusy(sessionId: string): boolean {
    return this.activeBySession.has(sessionId);
  }

  activeTurnOf(sessionId: string): ActiveTurn | undefined {
    return this.activeBySession.get(sessionId);
  }

  async submit(rawSessionId: string, body: CreateTurnBody): Promise<TurnRecord> {
    const session = await this.sessions.get(rawSessionId);
    const digest = inputDigest(body.input, body.images, body.files);
    const clientRequestId = body.clientRequestId?.toLowerCase();
    if (clientRequestId) {
      const existing = this.findActiveByClientRequestId(session.id, clientRequestId) ?? (await turnsTable.findTurnByClientRequestId(this.boundary.db, session.id, clientRequestId));
      if (existing) return this.replayIdempotent(existing, digest);
    }
    if (body.input.trim() === '' && !(body.images?.length)) throw new ApiError('empty_input', 'input is blank and there is no image');
    const attachments = decodeAttachments(body.images, body.files);

    // From here to the reservation there is no await: one active turn per session.
    if (clientRequestId) {
      const raced = this.findActiveByClientRequestId(session.id, clientRequestId);
      if (raced) return this.replayIdempotent(raced.record, digest);
    }
    if (this.activeBySession.has(session.id)) throw new ApiError('session_busy', 'the session has an active turn');
    const id = uuidv7();
    const record: TurnRecord = {
      id,
      boundaryId: this.boundary.id,
      sessionId: session.id,
      clientRequestId: clientRequestId ?? id,
      inputDigest: digest,
      status: 'queued',
      createdAt: nowIso(),
      startedAt: null,
      finishedAt: null,
      error: null,
      // Only the row keeps the whole text; the runner reads it back when it was cut here.
      ...turnsTable.boundTurnText({ input: body.input, userText: body.input }),
      output: null,
    };
    let markFinished!: () => void;
    const turn: ActiveTurn = {
      tenantId: this.boundary.id,
      record,
      session,
      attachments,
      abort: new AbortController(),
      started: false,
      finished: new Promise<void>((resolve) => (markFinished = resolve)),
      markFinished: () => markFinished(),
      start: () => this.start(turn),
    };
    this.activeBySession.set(session.id, turn);
    this.activeById.set(id, turn);
    try {
      await turnsTable.insertTurn(this.boundary.db, record, { input: body.input, userText: body.input });
    } catch (error) {
      this.release(turn);
      if (clientRequestId) {
        const existing = await turnsTable.findTurnByClientRequestId(this.boundary.db, session.id, clientRequestId);
        if (existing) return this.replayIdempotent(existing, digest);
      }
      throw error;
    }

    this.hub.emit('turn.queued', session.id, id, {});
    const admission = this.scheduler.enqueue(turn);
    if (admission !== 'queued') {
      const reason = admission === 'queue_full' ? 'turn_queue_full: the server queue is full' : 'tenant_turn_queue_full: the tenant queue is full';
      await this.endWithoutRunning(turn, 'failed', reason);
    }
    return { ...record };
  }

  async get(rawId: string): Promise<TurnRecord> {
    const id = normalizeUuid(rawId);
    if (id) {
      const active = this.activeById.get(id);
      if (active) return { ...active.record };
      const cached = this.terminal.get(id);
      if (cached) return cached;
      const stored = await turnsTable.findTurn(this.boundary.db, this.boundary.id, id);
      if (stored) return stored;
    }
    throw new ApiError('turn_not_found', 'no such turn');
  }

  async list(rawSessionId: string | null): Promise<TurnRecord[]> {
    const sessionId = rawSessionId === null ? null : (normalizeUuid(rawSessionId) ?? rawSessionId);
    const stored = await turnsTable.listTurns(this.boundary.db, this.boundary.id, sessionId, 200);
    // A live turn's in-memory record is the newest truth (e.g. waiting_for_input before it is stored).
    return stored.map((record) => {
      const live = this.activeById.get(record.id);
      return live ? { ...live.record } : record;
    });
  }

  /** Queued, running or waiting becomes cancelled; the answer is the final, durable record. */
  async cancel(rawId: string): Promise<TurnRecord> {
    const record = await this.get(rawId);
    const active = this.activeById.get(record.id);
    if (!active) return record;
    if (!active.started && this.scheduler.remove(active)) {
      await this.endWithoutRunning(active, 'cancelled', null);
    } else {
      active.abort.abort(new TurnCancelled());
      await active.finished;
    }
    return this.get(record.id);
  }

  async cancelAll(): Promise<void> {
    await Promise.all([...this.activeById.keys()].map((id) => this.cancel(id).catch(() => undefined)));
  }

  /** Persists a status change of an active turn (running ↔ waiting_for_input). */
  async setStatus(turn: ActiveTurn, status: 'running' | 'waiting_for_input'): Promise<void> {
    if (turn.record.status === status || isTerminal(turn.record.status)) return;
    turn.record.status = status;
    await turnsTable.updateTurn(this.boundary.db, turn.record);
  }

  /** Called by the runner once the turn is terminal and durable. */
  completed(turn: ActiveTurn): void {
    this.release(turn);
    this.terminal.add({ ...turn.record });
    if (turn.started) this.scheduler.finished(turn);
    turn.markFinished();
  }

  /** Emits the terminal event of a turn. */
  emitTerminal(turn: ActiveTurn): void {
    const type = turn.record.status === 'completed' ? 'turn.completed' : turn.record.status === 'cancelled' ? 'turn.cancelled' : 'turn.failed';
    this.hub.emit(type, turn.record.sessionId, turn.record.id, { error: turn.record.error });
  }

  private start(turn: ActiveTurn): void {
    turn.started = true;
    this.executor(turn).catch((error: unknown) => {
      this.logger.error({ err: error, turnId: turn.record.id }, 'turn executor failed');
    });
  }

  private async endWithoutRunning(turn: ActiveTurn, status: 'failed' | 'cancelled', error: string | null): Promise<void> {
    const final: TurnRecord = { ...turn.record, status, error, finishedAt: nowIso() };
    try {
      await turnsTable.updateTurn(this.boundary.db, final);
    } finally {
      Object.assign(turn.record, final);
      this.emitTerminal(turn);
      this.completed(turn);
    }
  }

  private release(turn: ActiveTurn): void {
    if (this.activeBySession.get(turn.record.sessionId) === turn) this.activeBySession.delete(turn.record.sessionId);
    this.activeById.delete(turn.record.id);
  }

  private findActiveByClientRequestId(sessionId: string, clientRequestId: string): ActiveTurn | undefined {
    const active = this.activeBySession.get(sessionId);
    return active && active.record.clientRequestId === clientRequestId ? active : undefined;
  }

  private replayIdempotent(existing: TurnRecord | ActiveTurn, digest: string): TurnRecord {
    const record = 'record' in existing ? existing.record : existing;
    if (record.inputDigest !== digest) throw new ApiError('idempotency_conflict', 'this clientRequestId was used with a different input');
    const live = this.activeById.get(record.id);
    return { ...(live ? live.record : record) };
  }
}

export class TurnCancelled extends Error {
  constructor() {
    super('cancelled');
    this.name = 'TurnCancelled';
  }
}

export function isTerminal(status: string): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

export function toTurnDto(record: TurnRecord): TurnDto {
  return {
    id: record.id,
    clientRequestId: record.clientRequestId,
    sessionId: record.sessionId,
    status: record.status,
    createdAt: record.createdAt,
    startedAt: record.startedAt,
    finishedAt: record.finishedAt,
    error: record.error,
    input: record.input,
    userText: record.userText,
    inputTruncated: record.inputTruncated,
  };
}
