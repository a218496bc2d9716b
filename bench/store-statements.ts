/**
 * The store's share of a turn, without HTTP, the model or the event stream: the statements a turn
 * runs (the POST's session read and `queued` insert, the terminal transaction), one new session
 * every 10 turns, on SQLite in this process. Prints CPU per turn (process.cpuUsage), so two builds
 * compare on a busy machine where the whole turn benchmark's noise hides a 5% change.
 *
 *   node --import tsx bench/store-statements.ts            (BENCH_TURNS turns after 1,000 to warm up)
 *   BENCH_AGENTD_ROOT=<another checkout> node --import tsx bench/store-statements.ts
 *                                                          (that checkout's compiled dist/store)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { agentdRoot, ensureBuilt } from './support/children.ts';
import { fixed, printFigure, runIfMain, whole } from './support/report.ts';
import type * as DatabaseModule from '../src/store/database.ts';
import type * as SessionsModule from '../src/store/sessions.ts';
import type * as TurnsModule from '../src/store/turns.ts';
import type { TurnRecord } from '../src/domain/turn.ts';
import type * as FinalizeModule from '../src/store/finalize.ts';
import type * as HistoryEntryModule from '../src/domain/history-entry.ts';
import type * as IdsModule from '../src/domain/ids.ts';

const TURNS_PER_SESSION = 10;
const BOUNDARY = 'default';

interface StoreModules {
  database: typeof DatabaseModule;
  sessions: typeof SessionsModule;
  turns: typeof TurnsModule;
  finalize: typeof FinalizeModule;
  historyEntry: typeof HistoryEntryModule;
  ids: typeof IdsModule;
}

/** The compiled modules of `root` (what agentd runs), built first if its sources are newer. */
export async function loadStore(root: string): Promise<StoreModules> {
  ensureBuilt(root);
  const load = (path: string) => import(pathToFileURL(join(root, 'dist', path)).href);
  const [database, sessions, turns, finalize, historyEntry, ids] = await Promise.all(
    ['store/database.js', 'store/sessions.js', 'store/turns.js', 'store/finalize.js', 'domain/history-entry.js', 'domain/ids.js'].map(load),
  );
  return { database, sessions, turns, finalize, historyEntry, ids };
}

/** Runs `count` turns' statements as agentd does, one at a time; a new session every 10 turns. */
export async function runTurns(modules: StoreModules, db: DatabaseModule.Db, count: number): Promise<void> {
  const { sessions, turns, finalize, historyEntry, ids } = modules;
  let sessionId = '';
  for (let index = 0; index < count; index++) {
    if (index % TURNS_PER_SESSION === 0) {
      sessionId = ids.uuidv7();
      const now = ids.nowIso();
      await sessions.insertSession(db, BOUNDARY, {
        id: sessionId, createdAt: now, updatedAt: now, provider: 'fake', connection: 'fake', model: 'bench', transportModel: 'fake-model',
        dialect: 'openai-responses', cwd: '/tmp', effort: 'none', title: 'New session', titleIsManual: false, archived: false,
        usage: { input: 0, output: 0, cached: 0 }, spentCostUsd: null, context: { usedTokens: 0, window: null }, budget: { tokens: null, costUsd: null }, repository: null, ownsCheckout: false, planMode: false, allowances: [],
      });
    }
    const session = await sessions.findSession(db, BOUNDARY, sessionId);
    const input = `turn ${index}`;
    const turn: TurnRecord = {
      id: ids.uuidv7(), boundaryId: BOUNDARY, sessionId: session!.id, clientRequestId: ids.uuidv7(), inputDigest: 'digest', status: 'queued',
      createdAt: ids.nowIso(), startedAt: null, finishedAt: null, error: null, ...turns.boundTurnText({ input, userText: input }), output: null, attempt: 1,
    };
    await turns.insertTurn(db, turn, { input, userText: input });
    const entry = historyEntry.buildHistoryEntry(
      { turnId: turn.id, at: ids.nowIso(), userText: input, usage: { inputTokens: 12, outputTokens: 8, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: null, webSearchRequests: null } },
      { kind: 'answered', effect: 'append', assistantText: 'one two three four five six seven eight', responseId: 'resp', items: [], discardedText: [], providerTelemetry: [] },
    );
    const finished: TurnRecord = {
      ...turn, status: 'completed', startedAt: turn.createdAt, finishedAt: ids.nowIso(),
      output: { responseId: 'resp', assistantText: 'one two three four five six seven eight', assistantTextTruncated: false, completion: { status: 'completed', reasoningTokens: null } },
    };
    const entryIndex = index % TURNS_PER_SESSION;
    await finalize.finalizeTurn(db, finished, entry, { sessionId, updatedAt: ids.nowIso(), derivedTitle: entryIndex === 0 ? input : null }, { index: entryIndex });
  }
}

runIfMain(import.meta.url, async () => {
  const root = agentdRoot();
  const turnCount = Number(process.env.BENCH_TURNS ?? 10_000);
  const modules = await loadStore(root);
  const stateDir = mkdtempSync(join(tmpdir(), 'agentd-bench-store-'));
  const store = await modules.database.openStore({ databaseUrl: null, stateDir });
  try {
    await runTurns(modules, store.db, 1000);
    const cpuBefore = process.cpuUsage();
    const startedAt = performance.now();
    await runTurns(modules, store.db, turnCount);
    const elapsedMs = performance.now() - startedAt;
    const cpu = process.cpuUsage(cpuBefore);
    printFigure({
      name: 'Store statements of a turn, SQLite, in process',
      value: `${fixed((cpu.user + cpu.system) / 1000 / turnCount, 3)} ms CPU per turn`,
      detail: `${whole(turnCount)} turns in ${fixed(elapsedMs / 1000)} s (${whole((turnCount * 1000) / elapsedMs)}/s); session read, turn insert, terminal transaction, a session every ${TURNS_PER_SESSION} turns; ${root}`,
    });
  } finally {
    await store.close();
    rmSync(stateDir, { recursive: true, force: true });
  }
});
