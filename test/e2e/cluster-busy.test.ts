// CONTRACT.md §18–§19, issue 30 item 2: one active turn per session holds across the instances of a
// cluster for changes of the session too. A turn admitted on beta and a change of its session on
// alpha at the same moment come one wholly before the other: the change answers 409 session_busy,
// or the turn sees the change (its session moved to another model; or, deleted, the turn is refused).
// A revert (CONTRACT.md §20) of a turn whose session has a turn active on another instance is refused.
// Real processes on a real PostgreSQL, the fake provider.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { http } from '../support/http.ts';
import { until, useTestCluster } from '../support/cluster.ts';

const ROUNDS = 24;

describe('changes of a session and turns admitted on another instance, at once', () => {
  const cluster = useTestCluster(() => ['--turn-lease-seconds', '10']);
  const { start, ended } = cluster;

  it('a PATCH of the model on alpha never lands while beta admits a turn that keeps the old model', async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    const violations: string[] = [];
    const outcomes = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round += 1) {
      const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: { model: 'fake-responses' } })).json;
      const marker = `PATCHRACE-${round}`;
      cluster.fake.respond(marker, () => ({ kind: 'hang' }));
      const [admission, patch] = await Promise.all([
        http('POST', `${beta.url}/v1/sessions/${session.id}/turns`, { body: { input: `${marker}: hold the session` } }),
        // a few offsets, so that the change meets the admission at different points
        delay(round % 4).then(() => http('PATCH', `${alpha.url}/v1/sessions/${session.id}`, { body: { model: 'fake-anthropic' } })),
      ]);
      assert.equal(admission.status, 202, JSON.stringify(admission.json));
      const key = `${admission.status}/${patch.status}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      const request = await until(`the model request of ${marker}`, async () => cluster.fake.requests.find((seen) => JSON.stringify(seen.body).includes(marker)));
      if (patch.status === 200 && request.dialect !== 'anthropic-messages') {
        violations.push(`round ${round}: the PATCH landed and the turn admitted with it asked ${request.dialect}`);
      } else if (patch.status !== 200) {
        assert.equal(patch.json?.error?.code, 'session_busy');
        assert.equal(request.dialect, 'openai-responses');
      }
      await http('POST', `${beta.url}/v1/turns/${admission.json.id}/cancel`);
      assert.equal((await ended(beta, admission.json.id)).status, 'cancelled');
    }
    assert.deepEqual(violations, [], `outcomes ${JSON.stringify([...outcomes])}`);
  });

  it('a DELETE on alpha and a turn on beta never both succeed', async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    const violations: string[] = [];
    const outcomes = new Map<string, number>();
    for (let round = 0; round < ROUNDS; round += 1) {
      const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
      const marker = `DELETERACE-${round}`;
      cluster.fake.respond(marker, () => ({ kind: 'hang' }));
      const [admission, deletion] = await Promise.all([
        http('POST', `${beta.url}/v1/sessions/${session.id}/turns`, { body: { input: `${marker}: hold the session` } }),
        delay(round % 4).then(() => http('DELETE', `${alpha.url}/v1/sessions/${session.id}`)),
      ]);
      const key = `${admission.status}/${deletion.status}`;
      outcomes.set(key, (outcomes.get(key) ?? 0) + 1);
      if (admission.status === 202 && deletion.status === 204) violations.push(`round ${round}: both succeeded`);
      else if (admission.status === 202) assert.equal(deletion.json?.error?.code, 'session_busy');
      else assert.deepEqual([admission.status, admission.json?.error?.code, deletion.status], [404, 'session_not_found', 204]);
      if (admission.status === 202 && deletion.status !== 204) {
        await http('POST', `${beta.url}/v1/turns/${admission.json.id}/cancel`);
        await ended(beta, admission.json.id);
      }
    }
    assert.deepEqual(violations, [], `outcomes ${JSON.stringify([...outcomes])}`);
  });

  it('a revert on beta while the session\'s next turn runs on alpha answers 409 session_busy; after the turn it reverts', async () => {
    const alpha = await start('alpha', ['--yolo']);
    const beta = await start('beta', ['--yolo']);
    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    const made = join(cluster.workspace, 'made-by-the-turn.txt');
    cluster.fake.route('REVERT-WRITE', { kind: 'reply', toolCalls: [{ name: 'apply_patch', kind: 'custom', arguments: '*** Begin Patch\n*** Add File: made-by-the-turn.txt\n+made\n*** End Patch', callId: 'call_patch' }] as any }, { kind: 'reply', text: 'written' }, { kind: 'hang' });
    const writer = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: 'REVERT-WRITE: make a file' } })).json;
    assert.equal((await ended(alpha, writer.id)).status, 'completed');
    assert.ok(existsSync(made));

    // the session's next request (its first user message is still REVERT-WRITE's) hangs
    const holder = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: 'REVERT-HOLD: hold the session' } })).json;
    await cluster.statusOn(beta, holder.id, 'running');
    for (const agentd of [beta, alpha]) {
      const refused = await http('POST', `${agentd.url}/v1/turns/${writer.id}/revert`);
      assert.deepEqual([refused.status, refused.json?.error?.code], [409, 'session_busy'], JSON.stringify(refused.json));
    }
    assert.ok(existsSync(made), 'nothing was written back');

    await http('POST', `${beta.url}/v1/turns/${holder.id}/cancel`);
    assert.equal((await ended(beta, holder.id)).status, 'cancelled');
    const reverted = await http('POST', `${beta.url}/v1/turns/${writer.id}/revert`);
    assert.deepEqual([reverted.status, reverted.json], [200, { reverted: ['made-by-the-turn.txt'] }]);
    assert.equal(existsSync(made), false);
  });
});
