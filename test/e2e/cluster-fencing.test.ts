// CONTRACT.md §18, issue 30 item 3: a turn runs under a lease with a fencing number (`attempt`);
// an owner frozen past its lease (SIGSTOP) loses the turn to another instance, and once thawed
// (SIGCONT) its writes are refused and it stands down; the other instance resumes the turn and
// ends it. Real processes on a real PostgreSQL.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { DEFAULT_REPLY_TEXT } from '../support/fake-provider.ts';
import { http } from '../support/http.ts';
import type { AgentdProcess } from '../support/agentd-process.ts';
import { until as untilWithin, useTestCluster } from '../support/cluster.ts';

const TERMINAL = ['completed', 'failed', 'cancelled'];
/** Short for a test, long enough for an event loop on a loaded two-core machine (docs/CLUSTER.md). */
const LEASE_SECONDS = 2;

/** This file's waits are shorter: its leases are. */
const until = <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 15_000) => untilWithin(what, probe, timeoutMs);

describe('fenced turn ownership across instances of a cluster', () => {
  const cluster = useTestCluster();
  const start = (instanceId: string, leaseSeconds: number) => cluster.start(instanceId, ['--turn-lease-seconds', String(leaseSeconds)]);
  const { turnOn } = cluster;

  it('a turn longer than several leases keeps its owner: renewed, it ends at attempt 1', async () => {
    const alpha = await start('alpha', LEASE_SECONDS);
    await start('beta', LEASE_SECONDS);
    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    // A first turn loads the provider and tool modules, a pause of the event loop that can pass a
    // short lease on a loaded machine (docs/CLUSTER.md): this test is about renewals, so it warms up.
    cluster.fake.enqueue({ kind: 'reply', text: 'warm' });
    const warmUp = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: 'warm up' } })).json;
    await until('the warm-up turn', async () => (TERMINAL.includes((await turnOn(alpha, warmUp.id)).status) ? true : undefined));
    // about 6 s of streaming: three leases
    cluster.fake.enqueue({ kind: 'reply', text: Array.from({ length: 30 }, (_, index) => `word${index}`).join(' '), chunkDelayMs: 200 });
    const turn = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: 'a long answer' } })).json;
    assert.equal(turn.attempt, 1);
    const ended = await until('the turn to end', async () => {
      const now = await turnOn(alpha, turn.id);
      return TERMINAL.includes(now.status) ? now : undefined;
    });
    assert.deepEqual([ended.status, ended.attempt], ['completed', 1]);
    assert.doesNotMatch(alpha.stdout(), /turn lease lost|took over/);
  });

  it('an owner frozen past its lease loses the turn; thawed, its writes are refused and it stands down', async (t) => {
    const alpha = await start('alpha', LEASE_SECONDS);
    const beta = await start('beta', LEASE_SECONDS);
    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    cluster.fake.enqueue({ kind: 'reply', text: 'warm' });
    const warmUp = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: 'warm up' } })).json;
    await until('the warm-up turn', async () => (TERMINAL.includes((await turnOn(alpha, warmUp.id)).status) ? true : undefined));
    cluster.fake.enqueue({ kind: 'hang', afterText: 'thinking' });
    const requestsBefore = cluster.fake.requests.length;
    const turn = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: 'work slowly' } })).json;
    await cluster.fake.waitForRequests(requestsBefore + 1);

    assert.doesNotMatch(alpha.stdout(), /turn lease lost/, 'alpha held its lease until it froze');
    alpha.child.kill('SIGSTOP');
    const frozenAt = Date.now();
    const taken = await until('beta to take the turn over', async () => {
      const now = await turnOn(beta, turn.id);
      return now.attempt === 2 ? now : undefined;
    });
    const takeoverMs = Date.now() - frozenAt;
    t.diagnostic(`taken over ${takeoverMs} ms after the owner froze (lease ${LEASE_SECONDS} s)`);
    assert.ok(['running', 'completed'].includes(taken.status), `resumed, not ended: ${taken.status}`);
    // the lease and a sweep period from the last renewal, which came at most a renewal period
    // before the freeze; a second for a loaded machine
    assert.ok(takeoverMs < LEASE_SECONDS * 1000 + 1_000, `taken over in ${takeoverMs} ms`);
    assert.match(beta.stdout(), /took over a turn whose lease ran out/);

    alpha.child.kill('SIGCONT');
    await until('alpha to stand down', async () => (/standing down/.test(alpha.stdout()) ? true : undefined));
    const lines = alpha.stdout().split('\n').filter((line) => line.includes(turn.id));
    assert.ok(lines.some((line) => /turn taken over by another instance: standing down/.test(line) && /"attempt":1/.test(line)), lines.join('\n'));

    // nothing of attempt 1 landed: the row is beta's, which resumed the turn (its model request had
    // no answer recorded: asked again) and ended it; the one entry appended is beta's
    for (const agentd of [alpha, beta]) {
      const now = await until('the resumed turn to end', async () => {
        const seen = await turnOn(agentd, turn.id);
        return TERMINAL.includes(seen.status) ? seen : undefined;
      });
      assert.deepEqual([now.status, now.error, now.attempt], ['completed', null, 2]);
    }
    const history = (await http('GET', `${beta.url}/v1/sessions/${session.id}/history`)).json;
    assert.equal(history.data.length, 2, 'the warm-up turn\'s entry and attempt 2\'s, none of attempt 1');
    assert.equal(history.data[1].turn.assistantText, DEFAULT_REPLY_TEXT);

    // alpha serves on: the session is free, a new turn runs on it
    assert.equal((await http('GET', `${alpha.url}/readyz`)).status, 200);
    cluster.fake.enqueue({ kind: 'reply', text: 'fresh' });
    const next = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: 'again' } })).json;
    const done = await until('the next turn', async () => {
      const now = await turnOn(alpha, next.id);
      return TERMINAL.includes(now.status) ? now : undefined;
    });
    assert.deepEqual([done.status, done.attempt], ['completed', 1]);
  });
});
