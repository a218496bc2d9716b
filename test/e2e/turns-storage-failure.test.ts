import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { BACKENDS } from '../support/backends.ts';
import { breakHistoryInserts } from '../support/storage-faults.ts';
import { waitForTurn } from '../support/server.ts';
import { useFakeServer } from '../support/harness.ts';
import { readHistoryRange } from '../../src/store/history.ts';
import { findTurn } from '../../src/store/turns.ts';
import { HISTORY_NOT_STORED } from '../../src/runtime/turn/turn-ends.ts';
import { DEFAULT_BOUNDARY_ID } from '../../src/runtime/boundary.ts';

for (const backend of BACKENDS) {
  describe(`a turn whose history cannot be stored on ${backend}`, () => {
    const harness = useFakeServer({ backend });
    const db = () => harness.server.server.store.db;

    it('fails the turn saying so, writes nothing of its transaction, and keeps the answer visible', async () => {
      const session = await harness.newSession();
      const repair = await breakHistoryInserts(backend, db());
      harness.fake.enqueue({ kind: 'reply', text: 'the answer worth keeping', usage: { input: 10, output: 5, cached: 0 } });
      const submitted = (await harness.server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'hello' } })).json;
      const turn = await waitForTurn(harness.server, submitted.id);
      await repair();
      assert.equal(turn.status, 'failed');
      assert.equal(turn.error, HISTORY_NOT_STORED);
      const result = (await harness.server.request('GET', `/v1/turns/${submitted.id}/result`)).json;
      assert.equal(result.output.assistantText, 'the answer worth keeping');
      assert.equal((await harness.events.waitForType('turn.failed', submitted.id)).data.data.error, HISTORY_NOT_STORED);

      // nothing half-written: no history entry, no usage, no title, no updatedAt from the transaction
      assert.deepEqual(await readHistoryRange(db(), session.id, 0, 10), []);
      const after = (await harness.server.request('GET', `/v1/sessions/${session.id}`)).json;
      assert.deepEqual(after.usage, { input: 0, output: 0, cached: 0 });
      assert.equal(after.title, session.title);
      assert.equal(after.updatedAt, session.updatedAt);
      // the durable record says the same as the answer, output included
      const stored = await findTurn(db(), DEFAULT_BOUNDARY_ID, submitted.id);
      assert.equal(stored?.status, 'failed');
      assert.equal(stored?.error, HISTORY_NOT_STORED);
      assert.equal(stored?.output?.assistantText, 'the answer worth keeping');

      // once the database heals, the session goes on at history index 0
      harness.fake.enqueue({ kind: 'reply', text: 'fine now' });
      const next = (await harness.server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'again' } })).json;
      assert.equal((await waitForTurn(harness.server, next.id)).status, 'completed');
      const history = await readHistoryRange(db(), session.id, 0, 10);
      assert.deepEqual(history.map((entry) => [entry.index, entry.userText]), [[0, 'again']]);
    });

    if (backend === 'postgres') {
      it('retries a finalisation that fails once, and the turn completes with one history entry', async () => {
        await sql`create sequence history_failures`.execute(db());
        await sql`create or replace function fail_history_once() returns trigger language plpgsql as $$ begin if nextval('history_failures') = 1 then raise exception 'simulated storage failure'; end if; return new; end $$`.execute(db());
        await sql`create trigger fail_history_once before insert on history_turns for each row execute function fail_history_once()`.execute(db());
        try {
          const session = await harness.newSession();
          harness.fake.enqueue({ kind: 'reply', text: 'stored on the second attempt' });
          const submitted = (await harness.server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'hello' } })).json;
          const turn = await waitForTurn(harness.server, submitted.id);
          assert.equal(turn.status, 'completed', turn.error);
          const history = await readHistoryRange(db(), session.id, 0, 10);
          assert.deepEqual(history.map((entry) => [entry.index, entry.assistantText]), [[0, 'stored on the second attempt']]);
          assert.equal((await sql<{ value: number }>`select last_value as value from history_failures`.execute(db())).rows[0].value >= 2, true);
        } finally {
          await sql`drop trigger fail_history_once on history_turns`.execute(db());
        }
      });
    }
  });
}
