/**
 * The benchmark's side of count-statements.mjs: preloads it into the agentd child and reads its
 * totals (a signal asks for them; the child writes them to a file).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface StatementCounts {
  seq: number;
  statements: number;
  commits: number;
  bySql: Record<string, number>;
}

const PRELOAD = new URL('./count-statements.mjs', import.meta.url).href;

export class StatementCounter {
  private pid: number | null = null;
  private asked = 0;

  private constructor(private readonly directory: string) {}

  /** The child inherits the environment: the file's path goes there before it is spawned. */
  static create(): StatementCounter {
    const counter = new StatementCounter(mkdtempSync(join(tmpdir(), 'agentd-bench-sql-')));
    process.env.BENCH_SQL_COUNT_FILE = counter.file;
    return counter;
  }

  static delta(before: StatementCounts, after: StatementCounts): Omit<StatementCounts, 'seq'> {
    const bySql: Record<string, number> = {};
    for (const [sql, count] of Object.entries(after.bySql)) {
      const added = count - (before.bySql[sql] ?? 0);
      if (added > 0) bySql[sql] = added;
    }
    return { statements: after.statements - before.statements, commits: after.commits - before.commits, bySql };
  }

  get nodeArgs(): string[] {
    return ['--import', PRELOAD];
  }

  private get file(): string {
    return join(this.directory, 'counts.json');
  }

  attach(pid: number): void {
    this.pid = pid;
  }

  async read(): Promise<StatementCounts> {
    if (this.pid === null) throw new Error('no child attached');
    const seq = ++this.asked;
    process.kill(this.pid, 'SIGUSR2');
    for (;;) {
      const counts = this.written();
      if (counts?.seq === seq) return counts;
      await sleep(5);
    }
  }

  /** The file as it is now; null while it is missing or half written. */
  private written(): StatementCounts | null {
    try {
      return existsSync(this.file) ? (JSON.parse(readFileSync(this.file, 'utf8')) as StatementCounts) : null;
    } catch {
      return null;
    }
  }

  dispose(): void {
    delete process.env.BENCH_SQL_COUNT_FILE;
    rmSync(this.directory, { recursive: true, force: true });
  }
}
