// Issue 18: under overload the SSE fan-out must not starve ordinary requests. A thousand
// subscribers (in a child process, reading every frame) are fed by many turns streaming at once;
// /healthz and a session read are timed meanwhile. Before the event log yielded between slices
// of deliveries, every event of a turn of the event loop went to every subscriber before the
// next request was read.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { startTestServer, fakeProviderModels, type TestServer } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';

const SUBSCRIBERS = 1_000;
const TURNS = Number(process.env.FANOUT_TURNS ?? 100);
const WORDS = Number(process.env.FANOUT_WORDS ?? 60);
/** generous: a request never waits this long behind the fan-out once it yields */
const ANSWER_WITHIN_MS = 2_000;

/** Opens `count` event streams to `port` and reads them to the end; prints "ready" once all are open. */
const SUBSCRIBER_SCRIPT = `
  const { connect } = require('node:net');
  const [port, count] = process.argv.slice(1).map(Number);
  let open = 0;
  for (let index = 0; index < count; index += 1) {
    const socket = connect(port, '127.0.0.1', () => socket.write('GET /v1/events HTTP/1.1\\r\\nHost: 127.0.0.1:' + port + '\\r\\n\\r\\n'));
    let first = true;
    socket.on('data', () => { if (first && ++open === count) process.stdout.write('ready\\n'); first = false; });
    socket.on('error', () => {});
  }
  process.stdin.on('end', () => process.exit(0)).resume();`;

describe('event fan-out under overload', () => {
  let fake: FakeProvider;
  let server: TestServer;
  let subscribers: ChildProcess;

  before(async () => {
    fake = await startFakeProvider();
    server = await startTestServer({
      models: fakeProviderModels(fake.baseUrl),
      args: ['--max-event-subscribers', String(SUBSCRIBERS + 10), '--max-concurrent-turns', String(TURNS), '--max-queued-turns', String(TURNS)],
    });
  });
  after(async () => {
    subscribers?.stdin?.end();
    if (subscribers && subscribers.exitCode === null) await once(subscribers, 'exit');
    await server.close();
    await fake.close();
  });

  async function timed(path: string): Promise<{ status: number; ms: number }> {
    const started = performance.now();
    const response = await server.request('GET', path);
    return { status: response.status, ms: performance.now() - started };
  }

  it('answers /healthz and a session read while 1,000 subscribers are fed', async () => {
    subscribers = spawn(process.execPath, ['-e', SUBSCRIBER_SCRIPT, String(server.server.port), String(SUBSCRIBERS)], { stdio: ['pipe', 'pipe', 'inherit'] });
    const [ready] = await once(subscribers.stdout!, 'data');
    assert.match(String(ready), /ready/);
    const sessions = await Promise.all(Array.from({ length: TURNS }, async () => (await server.request('POST', '/v1/sessions', { body: {} })).json));
    fake.setDefaultStep({ kind: 'reply', text: Array.from({ length: WORDS }, (_, index) => `w${index}`).join(' ') });

    const turns = await Promise.all(sessions.map(async ({ id }) => (await server.request('POST', `/v1/sessions/${id}/turns`, { body: { input: 'stream' } })).json));
    const probes: { status: number; ms: number }[] = [];
    const deadline = Date.now() + 120_000;
    let finished = 0;
    while (Date.now() < deadline) {
      probes.push(await timed('/healthz'), await timed(`/v1/sessions/${sessions[0].id}`));
      const states = await Promise.all(turns.map(async ({ id }) => (await server.request('GET', `/v1/turns/${id}`)).json.status));
      finished = states.filter((status) => status === 'completed').length;
      if (finished === TURNS) break;
    }
    console.log(`probes: ${probes.length}, slowest ${Math.round(Math.max(...probes.map((probe) => probe.ms)))} ms`);

    assert.equal(finished, TURNS, 'every turn completed');
    assert.ok(probes.length >= 4);
    for (const probe of probes) {
      assert.equal(probe.status, 200);
      assert.ok(probe.ms < ANSWER_WITHIN_MS, `a request answered after ${Math.round(probe.ms)} ms`);
    }
  });
});
