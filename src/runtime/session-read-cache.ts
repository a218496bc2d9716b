import { sessionRowsVersionNow } from '../store/sessions.ts';

/** Enough for every session a client polls and its first pages; beyond it the cache starts over. */
const MAXIMUM_ENTRIES = 2_000;

interface CachedRead {
  version: number;
  body: string;
}

/**
 * Response bodies of session reads (one session, a page of sessions) of one boundary, kept until
 * any session row is written: an entry holds the version of the session rows
 * (store/sessions.ts) it was read at and is served only while that version is current. A read is
 * kept only when no write happened while it ran, so a read that raced a write is never kept.
 * Each boundary has its own cache, so one tenant's entries are never another's answer.
 */
export class SessionReadCache {
  private readonly entries = new Map<string, CachedRead>();

  async read(key: string, produce: () => Promise<string>): Promise<string> {
    const version = sessionRowsVersionNow();
    const cached = this.entries.get(key);
    if (cached !== undefined && cached.version === version) return cached.body;
    const body = await produce();
    if (sessionRowsVersionNow() === version) this.keep(key, { version, body });
    return body;
  }

  private keep(key: string, entry: CachedRead): void {
    if (this.entries.size >= MAXIMUM_ENTRIES && !this.entries.has(key)) this.entries.clear();
    this.entries.set(key, entry);
  }
}
