/**
 * Logs never hold tokens, prompts or tool output (the project's guide), tried as an attacker would:
 * the real process (its own pino configuration, not a test logger) at `--log-level trace`, every
 * line it writes kept, and each secret sent where a careless log line would pick it up: the bearer
 * token and its near misses in every header a client might put it in, the query string and the
 * path; prompts and the model's answers; a command's output and error; a provider's error that
 * echoes the prompt; session titles; bodies that fail validation or do not parse.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBackend, type TestBackend } from '../support/backends.ts';
import { fakeProviderModels } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { http, type HttpResponse } from '../support/http.ts';
import { startAgentd, type AgentdProcess } from '../support/agentd-process.ts';

/** A secret no other text contains by chance. */
const secret = (what: string) => `${what}-${randomBytes(12).toString('hex')}`;

const TOKEN = randomBytes(33).toString('base64url');

describe('what the logs of the real process never hold', () => {
  let fake: FakeProvider;
  let backend: TestBackend;
  let agentd: AgentdProcess;
  let workspace: string;
  const auth = { authorization: `Bearer ${TOKEN}` };
  const call = (method: string, path: string, options: { headers?: Record<string, string>; body?: unknown; rawBody?: string } = {}): Promise<HttpResponse> =>
    http(method, agentd.url + path, { ...options, headers: { ...auth, ...options.headers } });

  /** Submits a turn in a fresh session and waits until it is terminal. */
  async function turn(input: string): Promise<any> {
    const session = (await call('POST', '/v1/sessions', { body: {} })).json;
    const submitted = await call('POST', `/v1/sessions/${session.id}/turns`, { body: { input } });
    assert.equal(submitted.status, 202, submitted.text);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const current = (await call('GET', `/v1/turns/${submitted.json.id}`)).json;
      if (['completed', 'failed', 'cancelled'].includes(current.status)) return current;
      assert.ok(Date.now() < deadline, `turn still ${current.status}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Every log line so far, parsed (each one must be JSON: a raw dump would be a leak of its own). */
  function logLines(): any[] {
    return agentd.stdout().split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line));
  }

  function assertNotLogged(secrets: Record<string, string>): void {
    const logs = agentd.stdout() + agentd.stderr();
    for (const [what, text] of Object.entries(secrets)) assert.ok(!logs.includes(text), `${what} (${text}) is in the log`);
  }

  before(async () => {
    fake = await startFakeProvider();
    backend = await createBackend('sqlite');
    workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-ws-')));
    const secrets = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-token-')));
    const tokenFile = join(secrets, 'token');
    writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    const modelsFile = join(backend.stateDir, 'models.json');
    writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fake.baseUrl)));
    agentd = await startAgentd(['--log-level', 'trace', '--token-file', tokenFile, '--state-dir', backend.stateDir, '--workspace-root', workspace, '--models-file', modelsFile]);
  });
  after(async () => {
    await agentd?.stop();
    await fake?.close();
    await backend?.drop();
  });

  it('never logs the bearer token, nor a near miss of it, wherever a client puts it', async () => {
    const nearMisses = [`${TOKEN.slice(0, -1)}${TOKEN.endsWith('A') ? 'B' : 'A'}`, TOKEN.slice(0, -1), `${TOKEN}x`, `${TOKEN.startsWith('x') ? 'y' : 'x'}${TOKEN.slice(1)}`];
    const refused: HttpResponse[] = [];
    for (const candidate of nearMisses) refused.push(await http('GET', `${agentd.url}/v1/sessions`, { headers: { authorization: `Bearer ${candidate}` } }));
    for (const authorization of [`bearer ${TOKEN}`, `Bearer  ${TOKEN}`, TOKEN, `Token ${TOKEN}`, `Basic ${Buffer.from(`agentd:${TOKEN}`).toString('base64')}`]) {
      refused.push(await http('GET', `${agentd.url}/v1/sessions`, { headers: { authorization } }));
    }
    const elsewhere: Record<string, string>[] = [{ cookie: `token=${TOKEN}` }, { 'x-api-key': TOKEN }, { 'proxy-authorization': `Bearer ${TOKEN}` }, { 'x-forwarded-authorization': `Bearer ${TOKEN}` }];
    for (const headers of elsewhere) {
      refused.push(await http('GET', `${agentd.url}/v1/sessions`, { headers }));
    }
    refused.push(await http('GET', `${agentd.url}/v1/sessions?token=${TOKEN}&access_token=${TOKEN}`));
    refused.push(await http('GET', `${agentd.url}/v1/sessions/${TOKEN}`));
    for (const response of refused) assert.equal(response.status, 401, response.text);
    // accepted requests carry it too, including in places it does not belong
    assert.equal((await call('GET', '/v1/sessions')).status, 200);
    assert.equal((await call('GET', `/v1/sessions?token=${TOKEN}`)).status, 200, 'an unknown query parameter is ignored');
    assert.equal((await call('GET', `/v1/sessions/${TOKEN}`)).status, 404);
    assert.equal((await call('POST', '/v1/sessions', { body: { title: 'x', token: TOKEN } })).status, 400);
    assert.equal((await call('GET', '/v1/sessions', { headers: { cookie: `token=${TOKEN}`, 'x-api-key': TOKEN } })).status, 200);

    // the refusals were logged (so the lines looked at are the right ones), without the token
    const statuses = logLines().filter((line) => line.msg === 'request').map((line) => line.status);
    assert.ok(statuses.filter((status) => status === 401).length >= refused.length, `the 401s are logged: ${statuses}`);
    assertNotLogged({ token: TOKEN, 'its first 24 characters': TOKEN.slice(0, 24), 'its last 24 characters': TOKEN.slice(-24), 'the basic credentials': Buffer.from(`agentd:${TOKEN}`).toString('base64').slice(0, 24) });
  });

  it('never logs a prompt, the model\'s answer or a command\'s output and error', async () => {
    const prompt = secret('PROMPT');
    const answer = secret('ANSWER');
    const output = secret('TOOL-OUTPUT');
    const missing = secret('TOOL-ERROR');
    writeFileSync(join(workspace, 'notes.txt'), `${output}\n`);
    fake.route(
      prompt,
      { kind: 'reply', text: `looking ${answer}`, toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: `cat notes.txt; cat ${missing}.txt` }), callId: 'call_read' }] },
      { kind: 'reply', text: `found it ${answer}` },
    );
    const done = await turn(`read the notes ${prompt}`);
    assert.equal(done.status, 'completed', JSON.stringify(done));
    const sent = fake.requests.at(-1)!.body.input.find((item: any) => item.call_id === 'call_read' && String(item.type).endsWith('_output'));
    assert.ok(String(sent.output).includes(output) && String(sent.output).includes(missing), 'the command ran: its output and error reached the model');
    assertNotLogged({ prompt, answer, 'tool output': output, 'tool error output': missing });
  });

  it('never logs a provider error that echoes the prompt, whole or cut mid-stream', async () => {
    const rejected = secret('PROMPT-REJECTED');
    fake.route(rejected, { kind: 'http-error', status: 400, body: { error: { type: 'invalid_request_error', message: `the prompt "read ${rejected}" is not allowed` } } });
    const failed = await turn(`read ${rejected}`);
    assert.equal(failed.status, 'failed');
    assert.match(failed.error, /provider_error/);
    const cut = secret('PROMPT-CUT');
    const partial = secret('PARTIAL-ANSWER');
    fake.route(cut, { kind: 'mid-stream-error', afterText: `half ${partial}`, code: 'invalid_prompt', message: `cannot continue "${cut}"` });
    const broken = await turn(`go on ${cut}`);
    assert.equal(broken.status, 'failed');
    const logged = logLines().filter((line) => line.msg === 'turn failed' && line.turnId === failed.id);
    assert.deepEqual(logged.map((line) => line.failure), ['provider_error'], 'the failure is logged, with its kind');
    assertNotLogged({ 'echoed prompt': rejected, 'prompt echoed mid-stream': cut, 'partial answer': partial });
  });

  it('never logs a session title nor the content of a body it refuses', async () => {
    const title = secret('TITLE');
    const created = await call('POST', '/v1/sessions', { body: { title } });
    assert.equal(created.status, 201);
    assert.equal((await call('PATCH', `/v1/sessions/${created.json.id}`, { body: { title: `${title}-renamed` } })).status, 200);
    const refusedInputs = [secret('UNKNOWN-FIELD'), secret('WRONG-TYPE'), secret('UNPARSABLE'), secret('LONG-TITLE')];
    assert.equal((await call('POST', '/v1/sessions', { body: { note: refusedInputs[0] } })).status, 400);
    assert.equal((await call('POST', `/v1/sessions/${created.json.id}/turns`, { body: { input: [refusedInputs[1]] } })).status, 400);
    assert.equal((await call('POST', `/v1/sessions/${created.json.id}/turns`, { rawBody: `{"input": "${refusedInputs[2]}`, headers: { 'content-type': 'application/json' } })).status, 400);
    assert.ok([400, 422].includes((await call('POST', '/v1/sessions', { body: { title: `${refusedInputs[3]}${'x'.repeat(100_000)}` } })).status));
    assertNotLogged({ title, ...Object.fromEntries(refusedInputs.map((input, index) => [`refused body ${index}`, input])) });
  });
});
