// The long contract-fuzzing run (issue 17 §1): the bounded suite's campaign for as long as asked,
// against a loopback and a bearer-token server with a fake model. Then:
//   node --import tsx scripts/fuzz.ts [--minutes 5] [--seed N]
// Prints the requests sent per operation and status and every violation; exits 1 on any.
import { parseArgs } from 'node:util';
import { startFakeProvider } from '../test/support/fake-provider.ts';
import { fakeProviderModels, startTestServer } from '../test/support/server.ts';
import { runFuzzCampaign } from '../test/reliability/support/fuzz-run.ts';
import { invariantViolations, type Requester } from '../test/reliability/support/invariants.ts';

const { values } = parseArgs({ options: { minutes: { type: 'string', default: '5' }, seed: { type: 'string' } } });
const minutes = Number(values.minutes);
const MAXIMUM_REQUEST_BYTES = 65_536;
const ALLOWED_ORIGIN = 'http://app.example';
const TOKEN = 'fuzz-token-0123456789abcdef0123456789abcdef';

let failed = false;
for (const mode of ['loopback', 'bearer'] as const) {
  const fake = await startFakeProvider();
  const server = await startTestServer({
    models: fakeProviderModels(fake.baseUrl),
    args: ['--maximum-request-bytes', String(MAXIMUM_REQUEST_BYTES), '--cors-origin', ALLOWED_ORIGIN, '--max-concurrent-turns', '8'],
    env: mode === 'bearer' ? { SERVICE_TOKEN: TOKEN } : {},
  });
  const headers: Record<string, string> = mode === 'bearer' ? { authorization: `Bearer ${TOKEN}` } : {};
  const request: Requester = async (method, path, body) => {
    const answer = await server.request(method, path, { body, headers });
    return { status: answer.status, json: answer.json };
  };
  await request('POST', '/v1/sessions', {});
  const report = await runFuzzCampaign({
    port: server.server.port,
    token: mode === 'bearer' ? TOKEN : null,
    allowedOrigin: ALLOWED_ORIGIN,
    maximumRequestBytes: MAXIMUM_REQUEST_BYTES,
    request,
    timeLimitMs: (minutes * 60_000) / 2,
    seed: values.seed === undefined ? undefined : Number(values.seed),
  });
  for (const turn of (await request('GET', '/v1/turns')).json.data) {
    if (!['completed', 'failed', 'cancelled'].includes(turn.status)) await request('POST', `/v1/turns/${turn.id}/cancel`);
  }
  report.violations.push(...(await invariantViolations(request)));
  const statuses = [...report.byStatus].sort(([a], [b]) => String(a).localeCompare(String(b))).map(([status, count]) => `${status}×${count}`).join(' ');
  console.log(`${mode}: ${report.requests} requests over ${report.byOperation.size}/${report.operations} operations (seed ${report.seed}); statuses ${statuses}; ${report.violations.length} violations`);
  for (const [operation, count] of report.byOperation) console.log(`  ${operation}: ${count}`);
  for (const violation of report.violations) console.log(`  VIOLATION ${violation}`);
  failed ||= report.violations.length > 0;
  await server.close();
  await fake.close();
}
process.exit(failed ? 1 : 0);
