import { ApiError } from '../../domain/errors.ts';
import { normalizeUuid, nowIso, uuidv7 } from '../../domain/ids.ts';
import { canonicalizeInside, isDirectory } from '../../workspace/paths.ts';
import { checkoutDirectory } from '../../workspace/checkout.ts';
import { resolveRepositorySource } from '../../workspace/repository-source.ts';
import { findModel } from '../../config/catalog.ts';
import type { Effort } from '../../agent/providers/types.ts';
import type { CatalogModel } from '../../config/models-file.ts';
import type { CreateSessionBody, PatchSessionBody } from '../../api/schemas.ts';
import * as sessionsTable from '../../store/sessions.ts';
import type { ArchiveFilter, SessionCursor } from '../../store/sessions.ts';
import { sessionRowCache } from '../../store/session-row-cache.ts';
import type { SessionBudget, SessionRecord } from '../../domain/session.ts';
import type { Boundary } from '../boundary.ts';
import type { EventHub } from '../event-hub.ts';
import { changeIdleSession, SESSION_BUSY } from '../../store/turn-leases.ts';
import type { Db } from '../../store/database.ts';
import { toSessionDto } from '../../api/dto.ts';
import type { RepositorySetups } from './setup.ts';
import { SessionReadCache } from './session-read-cache.ts';

export const UNTITLED = 'New session';

/** Session rules of CONTRACT.md §4 over the store. */
export class SessionService {
  /** the boundary's response bodies of session reads, until a session row is written */
  readonly readCache: SessionReadCache;

  constructor(
    private readonly boundary: Boundary,
    private readonly hub: EventHub,
    /** true when the session has a queued, running or waiting turn */
    private readonly isBusy: (sessionId: string) => boolean,
    private readonly setups: RepositorySetups,
    /** the session and its history are gone: whatever the runtime keeps of them goes too */
    private readonly onDeleted: (sessionId: string) => void = () => {},
  ) {
    this.readCache = new SessionReadCache(sessionRowCache(boundary.db));
  }

  async create(body: CreateSessionBody): Promise<SessionRecord> {
    if (body.repository && body.cwd !== undefined) {
      throw new ApiError('repository_with_cwd', 'give either cwd or repository, not both');
    }
    const model = this.resolveModel(body.model);
    const effort = resolveEffort(model, body.effort);
    const id = uuidv7();
    const roots = this.boundary.workspaceRoots;
    const repository = body.repository ? await resolveRepositorySource(body.repository, roots, this.boundary.tools.sandboxed) : null;
    const cwd = repository ? checkoutDirectory(roots, id, !this.boundary.tools.sandboxed) : this.resolveCwd(body.cwd);
    const now = nowIso();
    const session: SessionRecord = {
      id,
      createdAt: now,
      updatedAt: now,
      provider: model.provider,
      connection: model.connection,
      model: model.id,
      transportModel: model.transportModel,
      dialect: model.dialect,
      cwd,
      effort,
      title: body.title ?? UNTITLED,
      titleIsManual: body.title !== undefined,
      archived: false,
      usage: { input: 0, output: 0, cached: 0 },
      spentCostUsd: model.prices ? 0 : null,
      context: { usedTokens: 0, window: model.contextWindow },
      budget: budgetOf(body.budget),
      repository: body.repository ? { url: body.repository.url, ref: body.repository.ref ?? null } : null,
      ownsCheckout: repository !== null,
      planMode: false,
      allowances: [],
    };
    await sessionsTable.insertSession(this.boundary.db, this.boundary.id, session);
    this.announceCreated(session);
    // Not awaited: the client hears of the checkout through session.setup.* events.
    if (repository) this.setups.start(session, repository);
    return session;
  }

  async get(rawId: string): Promise<SessionRecord> {
    const id = normalizeUuid(rawId);
    const session = id ? await sessionsTable.findSession(this.boundary.db, this.boundary.id, id) : null;
    if (!session) throw new ApiError('session_not_found', 'no such session');
    return session;
  }

  list(options: { archive: ArchiveFilter; limit: number; after: SessionCursor | null }) {
    return sessionsTable.listSessions(this.boundary.db, this.boundary.id, options);
  }

  async patch(rawId: string, body: PatchSessionBody): Promise<SessionRecord> {
    const fields = Object.keys(body);
    if (fields.length === 0) throw new ApiError('empty_patch', 'give exactly one of title, archived, model, effort or budget');
    if (fields.length > 1) throw new ApiError('non_atomic_patch', 'give exactly one of title, archived, model, effort or budget per request');
    const session = await this.get(rawId);
    const updatedAt = nowIso();
    const { fields: change, changed } = this.patchOf(session, body, updatedAt);
    await this.whileIdle(session.id, (db) => sessionsTable.updateSessionFields(db, this.boundary.id, session.id, change));
    this.announceUpdated(changed);
    return changed;
  }

  /** The fields a PATCH writes, and the session as they leave it. */
  private patchOf(session: SessionRecord, body: PatchSessionBody, updatedAt: string): { fields: SessionFields; changed: SessionRecord } {
    if (body.title !== undefined) {
      return { fields: { title: body.title, titleIsManual: true, updatedAt }, changed: { ...session, title: body.title, titleIsManual: true, updatedAt } };
    }
    if (body.archived !== undefined) return { fields: { archived: body.archived, updatedAt }, changed: { ...session, archived: body.archived, updatedAt } };
    if (body.model !== undefined) return this.switchModel(session, body.model, updatedAt);
    if (body.planMode !== undefined) return { fields: { planMode: body.planMode, updatedAt }, changed: { ...session, planMode: body.planMode, updatedAt } };
    if (body.budget !== undefined) {
      const budget = budgetOf(body.budget);
      return { fields: { budget, updatedAt }, changed: { ...session, budget, updatedAt } };
    }
    return this.changeEffort(session, body.effort!, updatedAt);
  }

  /**
   * The session moves to another catalog model (CONTRACT.md §19): provider, connection, dialect
   * and transport model follow, and the next turn sends the whole canonical history in the new
   * dialect. The effort is the session's, so the new model must accept it. Dollars spent so far
   * stay; a session that was unpriced starts counting from 0 once its model has prices.
   */
  private switchModel(session: SessionRecord, modelId: string, updatedAt: string): { fields: SessionFields; changed: SessionRecord } {
    const model = this.resolveModel(modelId);
    resolveEffort(model, session.effort);
    const identity = { provider: model.provider, connection: model.connection, model: model.id, transportModel: model.transportModel, dialect: model.dialect };
    const spentCostUsd = session.spentCostUsd ?? (model.prices ? 0 : null);
    return {
      fields: { model: { ...identity, contextWindow: model.contextWindow }, spentCostUsd, updatedAt },
      changed: { ...session, ...identity, spentCostUsd, context: { ...session.context, window: model.contextWindow }, updatedAt },
    };
  }

  private changeEffort(session: SessionRecord, effort: Effort, updatedAt: string): { fields: SessionFields; changed: SessionRecord } {
    const model = findModel(this.boundary.catalog, session.model);
    if (!model) throw new ApiError('model_not_available', `model "${session.model}" is no longer in the catalog; switch the session's model first`);
    resolveEffort(model, effort);
    return { fields: { effort, updatedAt }, changed: { ...session, effort, updatedAt } };
  }

  /** `session.created` (CONTRACT.md §19): a list of sessions needs no polling. */
  announceCreated(session: SessionRecord): void {
    this.hub.emit('session.created', session.id, null, { session: toSessionDto(session) });
  }

  /** `session.updated`: sent once the change is durable, with the session as a GET now answers it. */
  announceUpdated(session: SessionRecord): void {
    this.hub.emit('session.updated', session.id, null, { session: toSessionDto(session) });
  }

  async delete(rawId: string): Promise<void> {
    const session = await this.get(rawId);
    const id = session.id;
    const deleted = await this.whileIdle(id, (db) => sessionsTable.deleteSessionCascade(db, this.boundary.id, id));
    if (!deleted) throw new ApiError('session_not_found', 'no such session');
    this.onDeleted(id);
    this.hub.emit('session.deleted', id, null, {});
    // A fork works in its parent's checkout: the checkout passes to it instead of disappearing.
    const heir = session.ownsCheckout ? await sessionsTable.findSessionByCwd(this.boundary.db, this.boundary.id, session.cwd) : null;
    if (heir) await sessionsTable.updateSessionFields(this.boundary.db, this.boundary.id, heir.id, { ownsCheckout: true });
    await this.setups.remove(session, heir !== null);
  }

  /** A session whose checkout is still being made cannot be forked yet (its turns wait; a fork's could not). */
  requireSetupFinished(session: SessionRecord): void {
    if (this.setups.isSettingUp(session.id)) throw new ApiError('session_busy', 'the session\'s repository checkout is still running');
  }

  /**
   * Makes a change that needs the session idle: 409 session_busy while a turn of it is active here
   * or, with --cluster, on any instance. With --cluster the check and the change are one
   * transaction under the session's lock (store/turn-leases.ts changeIdleSession), so a turn
   * admitted on another instance at the same moment comes wholly before or wholly after it.
   */
  async whileIdle<T>(id: string, change: (db: Db) => Promise<T>): Promise<T> {
    const busy = () => new ApiError('session_busy', 'the session has an active turn');
    if (this.isBusy(id)) throw busy();
    if (!this.boundary.cluster) return change(this.boundary.db);
    const outcome = await changeIdleSession(this.boundary.db, id, change);
    if (outcome === SESSION_BUSY) throw busy();
    return outcome;
  }

  resolveModel(id: string | undefined): CatalogModel {
    const catalog = this.boundary.catalog;
    if (id === undefined) {
      const fallback = catalog.defaultModelId ? findModel(catalog, catalog.defaultModelId) : undefined;
      if (!fallback) throw new ApiError('model_catalog_empty', 'no model is configured');
      return fallback;
    }
    const model = findModel(catalog, id);
    if (!model) throw new ApiError('model_not_available', `model "${id}" is not in the catalog`);
    return model;
  }

  /** Absent: the first root; relative: joined to it; must exist, be a directory, and lie inside a root. */
  resolveCwd(requested: string | undefined): string {
    const roots = this.boundary.workspaceRoots;
    if (requested === undefined) return roots[0];
    if (requested.includes('\0')) throw new ApiError('invalid_workspace', 'cwd contains a NUL byte');
    const located = canonicalizeInside(roots, requested, roots[0]);
    if (located.location === 'outside') throw new ApiError('workspace_not_allowed', 'cwd is outside every allowed workspace root');
    if (!located.exists || !isDirectory(located.resolved)) throw new ApiError('invalid_workspace', 'cwd is not an existing directory');
    return located.resolved;
  }
}

/** The fields of a session a PATCH writes (store/sessions.ts updateSessionFields). */
type SessionFields = Parameters<typeof sessionsTable.updateSessionFields>[3];

/** A budget as the client gave it: a limit left out is none. */
function budgetOf(input: CreateSessionBody['budget']): SessionBudget {
  return { tokens: input?.tokens ?? null, costUsd: input?.costUsd ?? null };
}

function resolveEffort(model: CatalogModel, requested: Effort | undefined): Effort {
  if (requested === undefined) return model.defaultEffort;
  if (!model.efforts.includes(requested)) {
    throw new ApiError('invalid_effort', `model "${model.id}" supports effort ${model.efforts.join(', ')}`);
  }
  return requested;
}
