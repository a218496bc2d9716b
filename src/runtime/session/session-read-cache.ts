import type { SessionRowCache } from '../../store/session-row-cache.ts';

/**
 * Enough for the sessions a client polls and their first pages; beyond either bound the cache
 * starts over. The size bound keeps a client that walks every cursor and limit from holding memory.
 */
const MAXIMUM_ENTRIES = 2_000;
const MAXIMUM_CHARACTERS = 4_000_000;

interface CachedRead {
  version: number;
  body: string;
}

/**
 * Response bodies of session reads (one session, a page of sessions) of one boundary, kept until
 * any session row is written: an entry holds the version of the session rows
 * (its store's SessionRowCache.version) it was read at and is served only while that version is current. A read is
 * kept only when no write happened while it ran, so a read that raced a write is never kept.
 * Each boundary has its own cache, so one tenant's entries are never another's answer.
 */
export class SessionReadCache {
  private readonly entries = new Map<string, CachedRead>();
  private characters = 0;

  /** `rows`: the session rows of the boundary's store, whose version says when a body is stale */
  constructor(private readonly rows: Pick<SessionRowCache, 'version'>) {}

  /** The kept body at once when it is current, else a promise of a fresh one. */
  read(key: string, produce: () => Promise<string>): string | Promise<string> {
    const version = this.rows.version;
    const cached = this.entries.get(key);
    if (cached !== undefined && cached.version === version) return cached.body;
    return this.readAfresh(key, produce, version);
  }

  private async readAfresh(key: string, produce: () => Promise<string>, version: number): Promise<string> {
    const body = await produce();
    if (this.rows.version === version) this.keep(key, { version, body });
    return body;
  }

  private keep(key: string, entry: CachedRead): void {
    const replaced = this.entries.get(key);
    if (replaced !== undefined) this.characters -= replaced.body.length;
    if (this.entries.size >= MAXIMUM_ENTRIES || this.characters + entry.body.length > MAXIMUM_CHARACTERS) {
      this.entries.clear();
      this.characters = 0;
    }
    if (entry.body.length > MAXIMUM_CHARACTERS) return;
    this.entries.set(key, entry);
    this.characters += entry.body.length;
  }
}
