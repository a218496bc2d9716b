import type { Db } from '../../store/database.ts';
import { contextAfter, contextSize, loadModelContext, type ContextEntry, type ModelContext } from './model-context.ts';

export interface ModelContextCacheLimits {
  sessions: number;
  /** characters of the contexts' JSON, image data included */
  chars: number;
}

export const MODEL_CONTEXT_CACHE_LIMITS: ModelContextCacheLimits = { sessions: 500, chars: 4_000_000 };
/** --cluster: another instance may append to a session's history unseen, so every turn loads its context */
export const NO_MODEL_CONTEXT_CACHE: ModelContextCacheLimits = { sessions: 0, chars: 0 };

/**
 * The model contexts of a boundary's recently used sessions, so a turn neither reads its
 * session's history back nor parses it again: a miss loads the context from the store, and every
 * history entry this process appends extends it in memory once its transaction has committed.
 *
 * Nothing checks an entry against the store at use: this process is the only writer of its
 * sessions' history (one agentd per database, as for the session read cache), and every write of
 * it here goes through append() or removes the session (forget()). An append that fails, or whose
 * outcome is unknown, drops the session's entry; an entry is never kept from a read that an
 * append or a forget overtook. A context the cache did not see being written (another writer
 * despite the rule) is still caught by the next append: it takes the cached next index, which
 * the history's primary key refuses once taken, and the retry reads the index from the store.
 *
 * Least recently used entries go first beyond `limits`; a context larger than the whole bound
 * is not kept.
 */
export class ModelContextCache {
  /** insertion order is use order: the first entry is the least recently used */
  private readonly entries = new Map<string, ModelContext>();
  private chars = 0;
  /** cold loads in flight, each with a token an append or forget of its session withdraws */
  private readonly loading = new Map<string, object>();

  constructor(
    private readonly db: Db,
    private readonly limits: ModelContextCacheLimits = MODEL_CONTEXT_CACHE_LIMITS,
  ) {}

  /** The session's current context. */
  async current(sessionId: string): Promise<ModelContext> {
    const held = this.entries.get(sessionId);
    if (held) {
      this.entries.delete(sessionId);
      this.entries.set(sessionId, held);
      return held;
    }
    const token = {};
    this.loading.set(sessionId, token);
    try {
      const loaded = await loadModelContext(this.db, sessionId);
      if (this.loading.get(sessionId) === token) this.keep(sessionId, loaded);
      return loaded;
    } finally {
      if (this.loading.get(sessionId) === token) this.loading.delete(sessionId);
    }
  }

  /**
   * Runs `write`, which stores `entry` as the session's next history entry and answers the index
   * it took; `write` gets the index the cache expects (undefined when it holds no context), which
   * the store may use instead of reading it. Once `write` resolves, the cached context is the one
   * after the entry; when it rejects, the session's context is forgotten.
   */
  async append(sessionId: string, entry: ContextEntry, write: (expectedIndex: number | undefined) => Promise<number>): Promise<number> {
    const before = this.entries.get(sessionId);
    let index: number;
    try {
      index = await write(before?.nextIndex);
    } catch (error) {
      this.forget(sessionId);
      throw error;
    }
    const now = this.entries.get(sessionId);
    this.forget(sessionId);
    // the entry came right after the context held before: the cache may go on from it
    if (now !== undefined && now === before && index === before.nextIndex) this.extend(sessionId, before, index, entry);
    return index;
  }

  /**
   * The write has committed, so nothing here may fail the append: a context that cannot be built
   * from the entry is simply not kept, and the next turn loads it from the store.
   */
  private extend(sessionId: string, before: ModelContext, index: number, entry: ContextEntry): void {
    try {
      this.keep(sessionId, contextAfter(before, index, entry));
    } catch {
      this.forget(sessionId);
    }
  }

  /** The session is gone (deleted), or its history changed otherwise. */
  forget(sessionId: string): void {
    this.loading.delete(sessionId);
    const held = this.entries.get(sessionId);
    if (!held) return;
    this.entries.delete(sessionId);
    this.chars -= contextSize(held);
  }

  /** How many sessions' contexts are held (for tests). */
  get size(): number {
    return this.entries.size;
  }

  private keep(sessionId: string, context: ModelContext): void {
    this.forget(sessionId);
    const size = contextSize(context);
    if (size > this.limits.chars) return;
    this.entries.set(sessionId, context);
    this.chars += size;
    for (const [oldest, held] of this.entries) {
      if (this.entries.size <= this.limits.sessions && this.chars <= this.limits.chars) break;
      this.entries.delete(oldest);
      this.chars -= contextSize(held);
    }
  }
}
