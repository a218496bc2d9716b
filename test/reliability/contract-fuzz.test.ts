// Issue 17 §1, bounded: requests derived from the served /openapi.json for every operation
// (bodies, path ids, query values, Host, Origin, Authorization, Content-Type, Content-Length,
// Last-Event-ID, odd encodings and sizes) against a loopback server and a bearer-token server.
// Every answer is documented, below 500, in the envelope; afterwards the server is healthy and its
// data consistent. The long run is scripts/fuzz.ts (docs/RELIABILITY.md).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { fakeProviderModels, startTestServer, type TestServer } from '../support/server.ts';
import { runFuzzCampaign } from './support/fuzz-run.ts';
import { invariantViolations, type Requester } from './support/invariants.ts';

const SECONDS_PER_SERVER = Number(process.env.AGENTD_FUZZ_SECONDS ?? 12);
const MAXIMUM_REQUEST_BYTES = 65_536;
const ALLOWED_ORIGIN = 'http://app.example';
const TOKEN = 'fuzz-token-0123456789abcdef0123456789abcdef';

async function settled(request: Requester, turnId: string): Promise<void> {
  for (let tries = 0; tries < 1_000; tries++) {
    const turn = (await request('GET', `/v1/turns/${turnId}`)).json;
    if (['completed', 'failed', 'cancelled'].includes(turn.status)) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`turn ${turnId} never ended`);
}

for (const mode of ['loopback', 'bearer'] as const) {
  describe(`contract fuzzing (${mode})`, () => {
    let fake: FakeProvider;
    let server: TestServer;
    let request: Requester;
    before(async () => {
      fake = await startFakeProvider();
      server = await startTestServer({
        models: fakeProviderModels(fake.baseUrl),
        args: ['--maximum-request-bytes', String(MAXIMUM_REQUEST_BYTES), '--cors-origin', ALLOWED_ORIGIN, '--max-concurrent-turns', '8'],
        env: mode === 'bearer' ? { SERVICE_TOKEN: TOKEN } : {},
      });
      const headers: Record<string, string> = mode === 'bearer' ? { authorization: `Bearer ${TOKEN}` } : {};
      request = async (method, path, body) => {
        const answer = await server.request(method, path, { body, headers });
        return { status: answer.status, json: answer.json };
      };
    });
    after(async () => {
      await server?.close();
      await fake?.close();
    });

    it('answers every generated request inside the contract and stays consistent', async () => {
      // Something to aim at: sessions, a finished turn and a turn waiting on an approval.
      const session = (await request('POST', '/v1/sessions', {})).json;
      const done = (await request('POST', `/v1/sessions/${session.id}/turns`, { input: 'hello' })).json;
      await settled(request, done.id);
      const waiting = (await request('POST', '/v1/sessions', {})).json;
      fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['bash', '-lc', 'rm -rf ./nothing-here'] }) }] });
      await request('POST', `/v1/sessions/${waiting.id}/turns`, { input: 'ask me' });

      const report = await runFuzzCampaign({ port: server.server.port, token: mode === 'bearer' ? TOKEN : null, allowedOrigin: ALLOWED_ORIGIN, maximumRequestBytes: MAXIMUM_REQUEST_BYTES, request, timeLimitMs: SECONDS_PER_SERVER * 1000 });
      assert.deepEqual(report.violations, [], `seed ${report.seed}`);
      console.log(`${mode}: ${report.requests} requests, statuses ${JSON.stringify(Object.fromEntries(report.byStatus))}`);
      assert.equal(report.byOperation.size, report.operations, `every operation was tried: ${[...report.byOperation.keys()].join(', ')}`);
      assert.ok(report.requests >= 100, `${report.requests} requests`);
      assert.ok(report.byStatus.has(mode === 'bearer' ? 401 : 403), 'the access checks were reached');
      assert.ok([...report.byStatus.keys()].some((status) => typeof status === 'number' && status < 300), 'some requests succeeded');

      // Once the work the fuzzer started is over, no turn is active and the data adds up.
      for (const turn of (await request('GET', '/v1/turns')).json.data) {
        if (!['completed', 'failed', 'cancelled'].includes(turn.status)) await request('POST', `/v1/turns/${turn.id}/cancel`);
      }
      assert.deepEqual(await invariantViolations(request), []);
    });
  });
}
