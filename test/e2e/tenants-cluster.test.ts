// CONTRACT.md §18 with §11, issue 30 item 2: multi-tenant hosts cluster too. Several agentd with
// --cluster on one registry, one administrative database and one tenant state root: they start
// together (provisioning serialised, each tenant's database shared), any instance serves any
// tenant's sessions, turns, requests, cancels and events, and a tenant's queue limit holds across
// the cluster. Real processes on a real PostgreSQL, the fake provider.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { endOf, turnOf, until, useTenantCluster } from '../tenancy/support/tenant-cluster.ts';
import { query } from '../tenancy/support/scratch-cluster.ts';
import { tenantDatabaseName } from '../../src/tenancy/provision.ts';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runnerScript } from './sandbox-support.ts';

const shell = (callId: string, command: string) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });
/** how often `target` is a mount point in this mount namespace (the servers' as well) */
const mountsAt = (target: string) => readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((line) => line.split(' ')[4] === target).length;
const ask = (callId: string, question: string) => ({ name: 'ask_question', arguments: JSON.stringify({ question, options: ['yes', 'no'] }), callId });

describe('multi-tenant hosts in a cluster', () => {
  const cluster = useTenantCluster({ tenantCount: 2, args: ['--turn-lease-seconds', '5', '--max-concurrent-turns-per-tenant', '1', '--max-queued-turns-per-tenant', '1'] });

  it('start together, and any instance serves any tenant: sessions, turns, requests, cancels and events', async () => {
    const [alpha, beta] = await Promise.all([cluster.start('alpha'), cluster.start('beta')]);
    for (const id of cluster.tenantIds) assert.equal((await query('select 1 from pg_database where datname = $1', [tenantDatabaseName(id)])).length, 1);
    const onAlpha = cluster.tenant(alpha, 0);
    const onBeta = cluster.tenant(beta, 0);
    const session = await onAlpha.request('POST', '/v1/sessions', { body: {} });
    assert.equal(session.status, 201);
    assert.equal((await onBeta.request('GET', `/v1/sessions/${session.json.id}`)).json.id, session.json.id, 'beta reads the session alpha created');
    const alphaEvents = await onAlpha.subscribe();
    const betaEvents = await onBeta.subscribe();

    // a turn given on beta asks a question; the question is answered on alpha
    cluster.fake.route('shared tenant question', { kind: 'reply', toolCalls: [ask('call_ask', 'Tabs?')] }, { kind: 'reply', text: 'answered' });
    const turn = await onBeta.request('POST', `/v1/sessions/${session.json.id}/turns`, { body: { input: 'shared tenant question' } });
    assert.equal(turn.status, 202, JSON.stringify(turn.json));
    const pending = await until('the question listed on alpha', async () => (await onAlpha.request('GET', `/v1/requests?turnId=${turn.json.id}`)).json.data[0]);
    assert.equal((await onAlpha.request('POST', `/v1/requests/${pending.id}/resolve`, { body: { decision: 'yes' } })).status, 200);
    const done = await endOf(onAlpha, turn.json.id);
    assert.equal(done.status, 'completed');
    assert.equal((await turnOf(onBeta, turn.json.id)).output?.text ?? done.output?.text, done.output?.text);
    // a subscriber on either instance gets the turn's events once each, in order, with the same ids
    await alphaEvents.waitForType('turn.completed', turn.json.id, 15_000);
    await betaEvents.waitForType('turn.completed', turn.json.id, 15_000);
    const idsOn = (events: typeof alphaEvents) => events.ofTurn(turn.json.id).map((event) => `${event.id} ${event.type}`);
    assert.deepEqual(idsOn(alphaEvents), idsOn(betaEvents));
    const ids = alphaEvents.ofTurn(turn.json.id).map((event) => Number(event.id));
    assert.deepEqual(ids, [...ids].sort((x, y) => x - y));
    assert.equal(new Set(ids).size, ids.length);
    assert.ok(idsOn(alphaEvents).some((line) => line.endsWith('request.resolved')));

    // a turn given on alpha (in a session beta created) is cancelled on beta
    cluster.fake.route('shared tenant hang', { kind: 'hang' });
    const second = await onBeta.request('POST', '/v1/sessions', { body: {} });
    const hanging = await onAlpha.request('POST', `/v1/sessions/${second.json.id}/turns`, { body: { input: 'shared tenant hang' } });
    await until('the turn running, seen on beta', async () => ((await turnOf(onBeta, hanging.json.id)).status === 'running' ? true : undefined));
    const cancelled = await onBeta.request('POST', `/v1/turns/${hanging.json.id}/cancel`);
    assert.equal(cancelled.status, 200);
    assert.equal((await endOf(onAlpha, hanging.json.id)).status, 'cancelled');

    // the other tenant is served by both as well, and sees nothing of the first
    const other = cluster.tenant(beta, 1);
    const otherSession = await other.request('POST', '/v1/sessions', { body: {} });
    assert.equal((await cluster.tenant(alpha, 1).request('GET', `/v1/sessions/${otherSession.json.id}`)).status, 200);
    assert.equal((await onAlpha.request('GET', `/v1/sessions/${otherSession.json.id}`)).status, 404);
  });

  it('a tenant\'s queue limit holds across instances; another tenant is untouched', async () => {
    const alpha = await cluster.start('alpha');
    const beta = await cluster.start('beta');
    const onAlpha = cluster.tenant(alpha, 0);
    const onBeta = cluster.tenant(beta, 0);
    const turnIn = async (tenant: typeof onAlpha, input: string) => {
      const session = await tenant.request('POST', '/v1/sessions', { body: {} });
      return (await tenant.request('POST', `/v1/sessions/${session.json.id}/turns`, { body: { input } })).json;
    };
    cluster.fake.route('queue running', { kind: 'hang' });
    cluster.fake.route('queue waiting', { kind: 'hang' });
    const running = await turnIn(onAlpha, 'queue running');
    await until('the first turn running', async () => ((await turnOf(onAlpha, running.id)).status === 'running' ? true : undefined));
    // beta's slot for the tenant is taken too, or beta would start alpha's queued turn (docs/CLUSTER.md)
    cluster.fake.route('queue beta slot', { kind: 'hang' });
    const betaSlot = await turnIn(onBeta, 'queue beta slot');
    await until('beta\'s turn running', async () => ((await turnOf(onBeta, betaSlot.id)).status === 'running' ? true : undefined));
    const waiting = await turnIn(onAlpha, 'queue waiting');
    assert.equal(waiting.status, 'queued');
    // beta queues nothing of the tenant, yet the tenant's one queued place is taken on alpha
    const refused = await turnIn(onBeta, 'queue refused');
    assert.equal(refused.status, 'failed');
    assert.match(refused.error, /^tenant_turn_queue_full/);
    cluster.fake.route('queue other tenant', { kind: 'reply', text: 'fine' });
    const other = await turnIn(cluster.tenant(beta, 1), 'queue other tenant');
    assert.equal((await endOf(cluster.tenant(alpha, 1), other.id)).status, 'completed');
    for (const turn of [running, waiting, betaSlot]) await onBeta.request('POST', `/v1/turns/${turn.id}/cancel`);
    assert.equal((await endOf(onAlpha, waiting.id)).status, 'cancelled');
  });

  it('count the server-wide queue (--max-queued-turns) across instances, a bound half a second old', async () => {
    const serverLimits = ['--max-concurrent-turns', '1', '--max-queued-turns', '1'];
    const alpha = await cluster.start('alpha', serverLimits);
    const beta = await cluster.start('beta', serverLimits);
    const turnIn = async (tenant: ReturnType<typeof cluster.tenant>, input: string) => {
      const session = await tenant.request('POST', '/v1/sessions', { body: {} });
      return (await tenant.request('POST', `/v1/sessions/${session.json.id}/turns`, { body: { input } })).json;
    };
    cluster.fake.route('wide-limit running', { kind: 'hang' });
    cluster.fake.route('wide-limit waiting', { kind: 'reply', text: 'ran after all' });
    const running = await turnIn(cluster.tenant(alpha, 0), 'wide-limit running');
    await until('the first turn running', async () => ((await turnOf(cluster.tenant(alpha, 0), running.id)).status === 'running' ? true : undefined));
    // alpha's one running slot is taken: the other tenant's turn waits in alpha's server queue
    const waiting = await turnIn(cluster.tenant(alpha, 1), 'wide-limit waiting');
    assert.equal(waiting.status, 'queued');
    const published = async (instance: string) => (await query('select queued_turns from cluster_instances where instance_id = $1', [instance], cluster.adminUrl))[0]?.queued_turns;
    await until('alpha to publish its queue', async () => ((await published('alpha')) === 1 ? true : undefined));
    // beta reads it at its next poll (every 500 ms)
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const refused = await turnIn(cluster.tenant(beta, 0), 'wide-limit refused');
    assert.equal(refused.status, 'failed', 'beta runs nothing, yet the cluster\'s one queued place is taken');
    assert.match(refused.error, /^turn_queue_full/);

    // the place frees once alpha's queued turn starts
    await cluster.tenant(beta, 0).request('POST', `/v1/turns/${running.id}/cancel`);
    assert.equal((await endOf(cluster.tenant(alpha, 1), waiting.id)).status, 'completed');
    await until('alpha to publish an empty queue', async () => ((await published('alpha')) === 0 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    cluster.fake.route('wide-limit admitted', { kind: 'reply', text: 'admitted' });
    const admitted = await turnIn(cluster.tenant(beta, 0), 'wide-limit admitted');
    assert.equal((await endOf(cluster.tenant(beta, 0), admitted.id)).status, 'completed');
  });

  it('share each tenant\'s disk image on one machine: an instance stopping leaves the mounts to the others, the last one unmounts', async (t) => {
    const disk = ['--sandbox-runner', runnerScript(), '--sandbox-disk-quota', '16M', '--sandbox-inode-quota', '200'];
    const alpha = await cluster.start('alpha', disk);
    const beta = await cluster.start('beta', disk);
    const onAlpha = cluster.tenant(alpha, 0);
    const stateDir = join(cluster.fixture.tenantStateRoot, onAlpha.id);
    const mountPoint = join(stateDir, 'sandbox-disk');
    t.after(() => {
      for (const target of [onAlpha.workspaceRoot, mountPoint]) if (mountsAt(target) > 0) execFileSync('umount', ['--lazy', target]);
    });
    const loopDevices = () => execFileSync('losetup', ['--associated', join(stateDir, 'sandbox-disk.ext4')], { encoding: 'utf8' }).split('\n').filter(Boolean).length;
    // beta used alpha's mounts rather than mounting the image a second time
    assert.deepEqual([mountsAt(onAlpha.workspaceRoot), mountsAt(mountPoint), loopDevices()], [1, 1, 1]);

    const runOn = async (tenant: typeof onAlpha, marker: string, command: string) => {
      cluster.fake.route(marker, { kind: 'reply', toolCalls: [shell(`call_${marker.replaceAll(' ', '_')}`, command)] }, { kind: 'reply', text: 'done' });
      const session = await tenant.request('POST', '/v1/sessions', { body: {} });
      const turn = await tenant.request('POST', `/v1/sessions/${session.json.id}/turns`, { body: { input: marker } });
      assert.equal((await endOf(tenant, turn.json.id, 60_000)).status, 'completed');
    };
    await runOn(cluster.tenant(beta, 0), 'disk write on beta', 'echo kept > kept.txt');
    await beta.stop();
    // alpha still works on the image: the bind and the file system stayed
    assert.deepEqual([mountsAt(onAlpha.workspaceRoot), mountsAt(mountPoint)], [1, 1]);
    assert.equal(readFileSync(join(onAlpha.workspaceRoot, 'kept.txt'), 'utf8'), 'kept\n');
    await runOn(onAlpha, 'disk write on alpha', 'cat kept.txt > seen.txt');
    assert.equal(readFileSync(join(mountPoint, 'workspace', 'seen.txt'), 'utf8'), 'kept\n');

    // the last one to stop unmounts
    await alpha.stop();
    assert.deepEqual([mountsAt(onAlpha.workspaceRoot), mountsAt(mountPoint)], [0, 0]);
    assert.ok(!existsSync(join(onAlpha.workspaceRoot, 'kept.txt')), 'the workspace root shows what lies beneath the mount again');
  });

  /** The model requests of the conversation whose first user message holds `marker`. */
  const asked = (marker: string) => cluster.fake.requests.filter((request) => request.dialect !== null && JSON.stringify(request.body).includes(marker)).length;

  for (const [how, end] of [
    ['killed (-9)', (agentd: { kill(): Promise<void> }) => agentd.kill()],
    ['stopped (SIGTERM)', (agentd: { stop(): Promise<void> }) => agentd.stop()],
  ] as const) {
    it(`a tenant's turns on an instance ${how} are taken over by an instance that never served the tenant`, async (t) => {
      const alpha = await cluster.start('alpha');
      const beta = await cluster.start('beta');
      const onAlpha = cluster.tenant(alpha, 1);
      // a first turn on alpha loads the provider and tool modules, a pause a lease must not meet
      cluster.fake.route(`warm ${how}`, { kind: 'reply', text: 'warm' });
      const warm = await onAlpha.request('POST', '/v1/sessions', { body: {} });
      const warmTurn = await onAlpha.request('POST', `/v1/sessions/${warm.json.id}/turns`, { body: { input: `warm ${how}` } });
      assert.equal((await endOf(onAlpha, warmTurn.json.id)).status, 'completed');

      const marker = `taken over after alpha was ${how}`;
      cluster.fake.route(marker, { kind: 'hang' }, { kind: 'reply', text: 'resumed elsewhere' });
      const session = await onAlpha.request('POST', '/v1/sessions', { body: {} });
      const turn = await onAlpha.request('POST', `/v1/sessions/${session.json.id}/turns`, { body: { input: marker } });
      await until('the model asked on alpha', async () => (asked(marker) === 1 ? true : undefined));
      await end(alpha);
      const endedAt = Date.now();
      // nothing asks beta about the tenant: it finds the tenant alpha held and resumes its turn
      await until('beta to ask the model again', async () => (asked(marker) === 2 ? true : undefined), 30_000);
      t.diagnostic(`the model asked again ${Date.now() - endedAt} ms after alpha was ${how} (lease 5 s)`);
      const done = await endOf(cluster.tenant(beta, 1), turn.json.id);
      assert.deepEqual([done.status, done.attempt], ['completed', 2]);
      const history = (await cluster.tenant(beta, 1).request('GET', `/v1/sessions/${session.json.id}/history`)).json.data;
      assert.equal(history.at(-1).turn.assistantText, 'resumed elsewhere');
    });
  }

  it('a lone instance killed (-9) and started again under its --instance-id resumes its tenant\'s turn unasked', async () => {
    const alpha = await cluster.start('alpha');
    const onAlpha = cluster.tenant(alpha, 0);
    cluster.fake.route('restart warm', { kind: 'reply', text: 'warm' });
    const warm = await onAlpha.request('POST', '/v1/sessions', { body: {} });
    const warmTurn = await onAlpha.request('POST', `/v1/sessions/${warm.json.id}/turns`, { body: { input: 'restart warm' } });
    assert.equal((await endOf(onAlpha, warmTurn.json.id)).status, 'completed');
    const marker = 'resumed by the same instance id';
    cluster.fake.route(marker, { kind: 'hang' }, { kind: 'reply', text: 'resumed after the restart' });
    const session = await onAlpha.request('POST', '/v1/sessions', { body: {} });
    const turn = await onAlpha.request('POST', `/v1/sessions/${session.json.id}/turns`, { body: { input: marker } });
    await until('the model asked', async () => (asked(marker) === 1 ? true : undefined));
    await alpha.kill();
    const again = await cluster.start('alpha');
    // the rows the killed process left are this instance's by name, yet no runtime holds them here
    await until('the restarted alpha to ask the model again', async () => (asked(marker) === 2 ? true : undefined), 30_000);
    const done = await endOf(cluster.tenant(again, 0), turn.json.id);
    assert.deepEqual([done.status, done.attempt], ['completed', 2]);
  });
});
