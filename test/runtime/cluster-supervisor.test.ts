// Issue 40 item 4: one supervisor loop per instance for a cluster's background work
// (src/runtime/cluster-supervisor.ts). With N tenant runtimes open, the timers the runtime and
// tenancy code holds are one, not the 5N + 2 intervals they were; and a cancel and an answer given
// on one instance reach the turn on another through the doorbell (LISTEN/NOTIFY), with the poll set
// to a minute so that only a ring can explain how soon. Real servers in this process, a real
// PostgreSQL, the fake provider.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { promisify } from 'node:util';
import { readdirSync, readFileSync } from 'node:fs';
import { DEFAULT_MODELS, fakeProviderModels, startTestServer, type TestServer } from '../support/server.ts';
import { startTenantServer, type TenantServer } from '../tenancy/support/tenant-server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { until } from '../support/cluster.ts';

const TENANTS = 3;
/** The poll of the doorbell test: far longer than anything it waits for. */
const LONG_POLL_MS = 60_000;

/**
 * Records the timers created from here on that are still pending, each with the file of the code
 * that created it. Restores the globals when `restore` is called.
 */
function spyOnTimers(): { pendingFrom(pattern: RegExp): string[]; restore(): void } {
  const original = { setTimeout, setInterval, clearTimeout, clearInterval };
  const pending = new Map<unknown, string>();
  const creator = () => /\((?:file:\/\/)?([^:)]+)[:)]/.exec(new Error().stack!.split('\n')[3] ?? '')?.[1] ?? 'unknown';
  const spiedTimeout = ((callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const timer = original.setTimeout((...given: unknown[]) => {
      pending.delete(timer);
      callback(...given);
    }, ms, ...args);
    pending.set(timer, creator());
    return timer;
  }) as typeof setTimeout;
  Object.assign(spiedTimeout, { [promisify.custom]: (original.setTimeout as any)[promisify.custom] });
  globalThis.setTimeout = spiedTimeout;
  globalThis.setInterval = ((callback: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const timer = original.setInterval(callback, ms, ...args);
    pending.set(timer, creator());
    return timer;
  }) as typeof setInterval;
  const clear = (timer: any) => {
    pending.delete(timer);
    original.clearTimeout(timer);
  };
  globalThis.clearTimeout = clear as typeof clearTimeout;
  globalThis.clearInterval = clear as typeof clearInterval;
  return {
    pendingFrom: (pattern) => [...pending.values()].filter((file) => pattern.test(file)),
    restore: () => Object.assign(globalThis, original),
  };
}

describe('one supervisor loop per instance', () => {
  let server: TenantServer;
  let timers: ReturnType<typeof spyOnTimers>;
  before(async () => {
    timers = spyOnTimers();
    server = await startTenantServer({ tenantCount: TENANTS, models: DEFAULT_MODELS, args: ['--cluster', '--turn-lease-seconds', '3'] });
  });
  after(async () => {
    timers.restore();
    await server?.close();
  });

  it(`${TENANTS} tenant runtimes open: one timer runs the leases, polls and relays of all of them`, async () => {
    for (const tenant of server.tenants) assert.equal((await tenant.request('GET', '/v1/sessions')).status, 200);
    assert.equal(server.server.activity().activeTurns, 0);
    const supervisor = server.server.supervisor!;
    const duties = supervisor.dutyNames();
    // every kind of work is there, once per tenant runtime, and the tenants' and queue's leases once per instance
    for (const name of ['turn leases', 'turn lease watchdog', 'turn cancels', 'queued turns', 'request answers', 'turn steers', 'event stream']) {
      assert.equal(duties.filter((duty) => duty === name).length, TENANTS, `${name}: ${duties.join(', ')}`);
    }
    assert.deepEqual(duties.filter((duty) => duty.startsWith('cluster ')).sort(), ['cluster queue', 'cluster tenants']);
    // ... and one timer runs them: before the supervisor, 5N + 2 intervals and watchdogs were pending here
    const pending = timers.pendingFrom(/\/src\/(runtime|tenancy)\//);
    assert.deepEqual(pending.map((file) => file.replace(/^.*\/src\//, 'src/')), ['src/runtime/cluster-supervisor.ts']);
    assert.equal(supervisor.timers, 1);
  });
});

const shellCall = (callId: string, command: string[]) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

/** Whether a process runs whose command line is exactly `argv` (a tool's command, made unique by its argument). */
function running(argv: string[]): boolean {
  const wanted = argv.join('\0');
  return readdirSync('/proc').some((entry) => {
    try {
      return /^\d+$/.test(entry) && readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0$/, '') === wanted;
    } catch {
      return false; // ended meanwhile
    }
  });
}

describe('cancels and answers reach the turn\'s owner through the doorbell', () => {
  let fake: FakeProvider;
  let alpha: TestServer;
  let beta: TestServer;
  before(async () => {
    fake = await startFakeProvider();
    const options = { backend: 'postgres' as const, models: fakeProviderModels(fake.baseUrl), confinement: 'off' as const, clusterPollMs: LONG_POLL_MS };
    alpha = await startTestServer({ ...options, args: ['--cluster', '--instance-id', 'alpha', '--turn-lease-seconds', '30'] });
    beta = await startTestServer({ ...options, args: ['--cluster', '--instance-id', 'beta', '--turn-lease-seconds', '30'], reuse: { backend: alpha.backend, workspace: alpha.workspace } });
  });
  after(async () => {
    await beta?.stop();
    await alpha?.close();
    await fake?.close();
  });

  it(`an answer and a cancel given on beta act on alpha's turn at once, the poll being ${LONG_POLL_MS / 1000} s`, async (t) => {
    const session = (await alpha.request('POST', '/v1/sessions', { body: {} })).json;
    // the tool asks for approval (no --yolo); once approved it runs until it is killed
    const sleeper = ['sleep', '41.5'];
    fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_sleep', sleeper)] });
    const turn = (await alpha.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'sleep a while' } })).json;
    const [request] = await until('beta to list alpha\'s request', async () => {
      const listed = (await beta.request('GET', `/v1/requests?turnId=${turn.id}`)).json.data;
      return listed.length > 0 ? listed : undefined;
    });

    const answeredAt = Date.now();
    assert.equal((await beta.request('POST', `/v1/requests/${request.id}/resolve`, { body: { decision: 'allow_once' } })).status, 200);
    await until('alpha to run the tool beta approved', async () => (running(sleeper) ? true : undefined), LONG_POLL_MS / 2);
    const answerMs = Date.now() - answeredAt;

    const cancelledAt = Date.now();
    const cancelled = await beta.request('POST', `/v1/turns/${turn.id}/cancel`);
    const cancelMs = Date.now() - cancelledAt;
    t.diagnostic(`answer acted on in ${answerMs} ms, cancel answered in ${cancelMs} ms (poll ${LONG_POLL_MS} ms)`);
    assert.equal(cancelled.status, 200);
    assert.deepEqual([cancelled.json.status, cancelled.json.attempt], ['cancelled', 1], 'the owner ended it, no takeover');
    assert.equal(running(sleeper), false, 'the tool\'s process was killed');
    // only a ring explains either: the next poll is a minute away, the lease half a minute
    assert.ok(answerMs < LONG_POLL_MS / 4, `the answer took ${answerMs} ms`);
    assert.ok(cancelMs < LONG_POLL_MS / 4, `the cancel took ${cancelMs} ms`);
  });
});
