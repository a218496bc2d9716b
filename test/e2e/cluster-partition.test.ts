// Issue 40 item 5: a partition ends cleanly. One instance is cut off from PostgreSQL by a loopback
// proxy that stops forwarding (no reset, no close: packets simply go unanswered), as a network
// partition does, while the process itself runs on. Its owner stops its turn by itself within the
// lease, killing the turn's shell command, while its lease renewal still waits on the database;
// the other instance takes the turn over; and an instance cut off in the middle of an admission
// holds no lock that keeps the other instance's admissions waiting. Real processes, a real
// PostgreSQL, a real TCP proxy.
import { describe, it, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { http } from '../support/http.ts';
import { until, useTestCluster } from '../support/cluster.ts';
import { startFreezableProxy, type FreezableProxy } from '../support/freezable-proxy.ts';
import type { AgentdProcess } from '../support/agentd-process.ts';

/** Short for a test, long enough for an event loop on a loaded two-core machine (docs/CLUSTER.md). */
const LEASE_SECONDS = 2;

const shellCall = (callId: string, script: string) => ({ name: 'shell', arguments: JSON.stringify({ command: ['sh', '-c', script] }), callId });
const linesOf = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0);
/** Whether a process whose command line holds `marker` runs on this machine. */
const running = (marker: string) => {
  try {
    execFileSync('pgrep', ['-f', marker], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

describe('an instance cut off from PostgreSQL (a partition, not a crash)', () => {
  const cluster = useTestCluster();
  let proxy: FreezableProxy;
  before(async () => {
    proxy = await startFreezableProxy();
  });
  after(() => proxy.close());
  const start = (instanceId: string, throughProxy: boolean) =>
    cluster.start(instanceId, ['--yolo', '--turn-lease-seconds', String(LEASE_SECONDS), ...(throughProxy ? ['--database-url', proxy.urlFor(cluster.backend.databaseUrl!)] : [])]);
  const warmUp = async (agentd: AgentdProcess) => {
    const warm = (await http('POST', `${agentd.url}/v1/sessions`, { body: {} })).json;
    cluster.fake.route(`warm up ${warm.id}`, { kind: 'reply', text: 'warm' });
    const turn = (await http('POST', `${agentd.url}/v1/sessions/${warm.id}/turns`, { body: { input: `warm up ${warm.id}` } })).json;
    await cluster.ended(agentd, turn.id);
  };

  it('the cut-off owner kills its shell command and stands down; the other instance takes the turn over', async () => {
    const alpha = await start('alpha', true);
    const beta = await start('beta', false);
    await warmUp(alpha);
    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    const marker = `partition-${session.id}`;
    const written = join(cluster.workspace, `${marker}.txt`);
    cluster.fake.route(
      marker,
      { kind: 'reply', toolCalls: [shellCall('call_forever', `while :; do echo x >> ${written}; sleep 0.1; done # ${marker}`)] },
      { kind: 'reply', text: 'the call was interrupted; not repeating it' },
    );
    const turn = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: `${marker}: write for ever` } })).json;
    await until('the shell command to write', async () => (linesOf(written) > 0 ? true : undefined));

    proxy.freeze();
    // alpha's renewal now waits on a query nobody answers: only its own watchdog can stop the turn
    await until('alpha to stop its turn', async () => (/turn leases could not be renewed in time: stopping their turns/.test(alpha.stdout()) ? true : undefined));
    await until('the shell command to be killed', async () => (running(marker) ? undefined : true));
    const linesAtKill = linesOf(written);

    const ended = await cluster.ended(beta, turn.id);
    assert.deepEqual([ended.status, ended.attempt], ['completed', 2], 'beta took the turn over and ended it');
    // several periods of the killed loop: nothing of alpha's attempt writes any more
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(linesOf(written), linesAtKill, 'the old owner\'s command no longer writes into the workspace');

    // beta admits and runs turns all along
    const other = (await http('POST', `${beta.url}/v1/sessions`, { body: {} })).json;
    cluster.fake.route(`after ${other.id}`, { kind: 'reply', text: 'fine' });
    const next = (await http('POST', `${beta.url}/v1/sessions/${other.id}/turns`, { body: { input: `after ${other.id}` } })).json;
    assert.equal((await cluster.ended(beta, next.id)).status, 'completed');
    proxy.thaw();
  });

  it('an instance cut off in the middle of an admission keeps no lock: the other instance admits on', async () => {
    const alpha = await start('alpha', true);
    const beta = await start('beta', false);
    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    // the admission's statement reaches the server; nothing after it does, and no answer comes back
    proxy.freezeAfter('agentd_admit_turn');
    const cutOff = http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: 'admitted while cut off' } }).catch(() => null);
    await until('the admission to be cut off', async () => (proxy.frozen ? true : undefined));

    const other = (await http('POST', `${beta.url}/v1/sessions`, { body: {} })).json;
    cluster.fake.route(`beside ${other.id}`, { kind: 'reply', text: 'admitted' });
    const turn = await http('POST', `${beta.url}/v1/sessions/${other.id}/turns`, { body: { input: `beside ${other.id}` } });
    assert.equal(turn.status, 202, JSON.stringify(turn.json));
    assert.equal((await cluster.ended(beta, turn.json.id)).status, 'completed');
    // and no session of this database holds a transaction's advisory lock (one-bigint keys: the
    // queue's and the sessions'; the claim's is a two-integer key) while it waits on a cut-off client
    const admin = new pg.Client({ connectionString: cluster.backend.databaseUrl! });
    await admin.connect();
    try {
      const { rows } = await admin.query(
        `select count(*)::int as held from pg_locks l join pg_stat_activity a on a.pid = l.pid
          where l.locktype = 'advisory' and l.objsubid = 1 and l.granted and a.datname = current_database() and a.state like 'idle in transaction%'`,
      );
      assert.equal(rows[0].held, 0);
    } finally {
      await admin.end();
    }
    proxy.thaw();
    await cutOff;
  });
});
