/**
 * How many host inotify watches change receipts may hold (CONTRACT.md §21). Every watch of every
 * tenant is charged to the server uid's host-wide `fs.inotify.max_user_watches`, which every other
 * process of that uid shares, so watches are counted twice: against the tenant's budget
 * (--max-watches-per-tenant) and against the process's (half of max_user_watches, read at
 * start-up, leaving the other half to the rest of the uid). A watch that either budget refuses is
 * not added, and the receipts of that tree walk it instead (workspace-watch.ts).
 */
import { readFileSync } from 'node:fs';

const DEFAULT_MAX_WATCHES_PER_TENANT = 4096;

export class WatchBudget {
  private used = 0;

  constructor(
    readonly limit: number,
    private readonly parent?: WatchBudget,
  ) {}

  /** Takes one watch from this budget and every one above it; false (nothing taken) when any is spent. */
  take(): boolean {
    if (this.used >= this.limit) return false;
    if (this.parent && !this.parent.take()) return false;
    this.used++;
    return true;
  }

  /** Gives back one watch taken earlier. */
  give(): void {
    if (this.used === 0) return;
    this.used--;
    this.parent?.give();
  }

  get inUse(): number {
    return this.used;
  }

  /** Watches that could still be taken, here and above. */
  get free(): number {
    const own = this.limit - this.used;
    return this.parent ? Math.min(own, this.parent.free) : own;
  }
}

/** Half of the uid's host-wide watches (8,192 when /proc does not say). */
export function processWatchLimit(file = '/proc/sys/fs/inotify/max_user_watches'): number {
  try {
    const hostWide = Number(readFileSync(file, 'utf8').trim());
    if (Number.isSafeInteger(hostWide) && hostWide > 0) return Math.max(1, Math.floor(hostWide / 2));
  } catch {
    // no /proc: the fallback below
  }
  return 8192;
}

/** The one per-process budget every tenant's budget draws from. */
export const PROCESS_WATCH_BUDGET = new WatchBudget(processWatchLimit());
