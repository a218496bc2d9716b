import { after, before } from 'node:test';
import { createBackend, type BackendKind, type TestBackend } from './backends.ts';
import { openStore, type Store } from '../../src/store/database.ts';
import type { SessionRecord } from '../../src/domain/session.ts';
import { nowIso, uuidv7 } from '../../src/domain/ids.ts';

/**
 * Registers before/after hooks in the current suite that open a real store on a fresh database of
 * `kind`; closes it and drops the database afterwards.
 */
export function useStore(kind: BackendKind): { readonly store: Store } {
  let backend: TestBackend | undefined;
  let store: Store | undefined;
  before(async () => {
    backend = await createBackend(kind);
    store = await openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir });
  });
  after(async () => {
    await store?.close();
    await backend?.drop();
  });
  return {
    get store() {
      if (!store) throw new Error('the store opens in the suite\'s before hook');
      return store;
    },
  };
}

/** A new session as the store keeps it: fresh ids and times, no usage, nothing chosen by hand. */
export function sessionRecord(title = 'Untitled'): SessionRecord {
  const now = nowIso();
  return {
    id: uuidv7(), createdAt: now, updatedAt: now, provider: 'fake', connection: 'fake', model: 'm', transportModel: null,
    dialect: 'openai-responses', cwd: '/tmp', effort: 'none', title, titleIsManual: false, archived: false,
    usage: { input: 0, output: 0, cached: 0 }, spentCostUsd: null, context: { usedTokens: 0, window: null }, budget: { tokens: null, costUsd: null }, repository: null, ownsCheckout: false, planMode: false, allowances: [],
  };
}
