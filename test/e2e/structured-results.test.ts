/**
 * Structured results (CONTRACT.md §22) through the real server against the loopback fake provider:
 * the schema reaches each dialect in its native field, a valid answer becomes `result` (turn output,
 * history, `turn.result`), an invalid one is sent back with its problems at most twice, and then
 * the turn fails with `output_invalid`. Bad schemas are refused at the edge with the envelope.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { useFakeServer } from '../support/harness.ts';
import { waitForTurn } from '../support/server.ts';
import type { FakeRequest } from '../support/fake-provider.ts';
import { createClient } from '../../src/client/index.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startFakeProvider } from '../support/fake-provider.ts';
import { fakeProviderModels } from '../support/server.ts';
import { startAgentd } from '../readme/agentd-process.ts';

const SCHEMA = {
  type: 'object',
  properties: { verdict: { type: 'string', enum: ['pass', 'fail'] }, count: { type: 'integer', minimum: 0 } },
  required: ['verdict', 'count'],
  additionalProperties: false,
};

/** Where each dialect carries the schema on the wire, as the fake provider received it. */
const DIALECTS = [
  { model: 'fake-responses', schemaSent: (body: any) => body.text?.format?.type === 'json_schema' && body.text.format.schema },
  { model: 'fake-chat', schemaSent: (body: any) => body.response_format?.type === 'json_schema' && body.response_format.json_schema.schema },
  { model: 'fake-anthropic', schemaSent: (body: any) => body.output_config?.format?.type === 'json_schema' && body.output_config.format.schema },
] as const;

/** The text of every user message of a request, in any of the three dialects. */
function userTexts(request: FakeRequest): string {
  const body = request.body;
  const messages: any[] = body.input ?? body.messages ?? [];
  return JSON.stringify(messages.filter((message) => message.role === 'user'));
}

describe('structured results (outputSchema)', () => {
  const harness = useFakeServer();

  async function runTurn(model: string, replies: string[], body: Record<string, unknown> = {}) {
    const { fake, server } = harness;
    const session = await harness.newSession({ model });
    const before = fake.requests.length;
    fake.enqueue(...replies.map((text) => ({ kind: 'reply' as const, text })));
    const submitted = await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'Judge the build', outputSchema: SCHEMA, ...body } });
    assert.equal(submitted.status, 202, submitted.text);
    const turn = await waitForTurn(server, submitted.json.id);
    return { session, turn, requests: fake.requests.slice(before) };
  }

  for (const dialect of DIALECTS) {
    it(`${dialect.model}: the schema goes in the native field and a valid answer is the result everywhere`, async () => {
      const { session, turn, requests } = await runTurn(dialect.model, ['{"verdict":"pass","count":3}']);
      assert.equal(turn.status, 'completed', turn.error);
      assert.equal(requests.length, 1);
      assert.deepEqual(dialect.schemaSent(requests[0]!.body), SCHEMA);

      const result = (await harness.server.request('GET', `/v1/turns/${turn.id}/result`)).json;
      assert.deepEqual(result.output.result, { verdict: 'pass', count: 3 });
      const history = (await harness.server.request('GET', `/v1/sessions/${session.id}/history`)).json;
      assert.deepEqual(history.data.at(-1).turn.result, { verdict: 'pass', count: 3 });
      const event = await harness.events.waitForType('turn.result', turn.id);
      assert.deepEqual(event.data.data, { result: { verdict: 'pass', count: 3 } });
      const types = harness.events.ofTurn(turn.id).map((received) => received.type);
      assert.ok(types.indexOf('turn.result') < types.indexOf('turn.completed'), types.join(' '));
    });
  }

  it('the TypeScript SDK submits a schema and reads the result', async () => {
    const client = createClient({ baseUrl: harness.server.url });
    const session = await client.createSession({ body: { model: 'fake-chat' } });
    harness.fake.enqueue({ kind: 'reply', text: '{"verdict":"pass","count":7}' });
    const turn = await client.submitTurn(session.id, { input: 'Judge it', outputSchema: SCHEMA });
    const { output } = await client.waitForTurn(turn.id);
    assert.deepEqual(output?.result, { verdict: 'pass', count: 7 });
  });

  it('a turn without a schema sends no format and has no result', async () => {
    const { fake, server } = harness;
    const session = await harness.newSession({ model: 'fake-chat' });
    fake.enqueue({ kind: 'reply', text: 'plain prose' });
    const submitted = await harness.submit(session.id, 'Say something');
    const turn = await waitForTurn(server, submitted.id);
    assert.equal(fake.requests.at(-1)!.body.response_format, undefined);
    const result = (await server.request('GET', `/v1/turns/${turn.id}/result`)).json;
    assert.equal('result' in result.output, false);
  });

  it('an invalid answer is sent back with its problems, and the corrected one is the result', async () => {
    const { turn, requests } = await runTurn('fake-responses', ['Sure! The build passed.', '{"verdict":"maybe","count":1}', '{"verdict":"fail","count":0}']);
    assert.equal(turn.status, 'completed', turn.error);
    assert.equal(requests.length, 3);
    assert.match(userTexts(requests[1]!), /not JSON/);
    assert.match(userTexts(requests[2]!), /\/verdict: must be equal to one of the allowed values/);
    const result = (await harness.server.request('GET', `/v1/turns/${turn.id}/result`)).json;
    assert.deepEqual(result.output.result, { verdict: 'fail', count: 0 });
  });

  it('an answer still invalid after two re-asks fails the turn with output_invalid', async () => {
    const { turn, requests } = await runTurn('fake-anthropic', ['{"verdict":"pass"}', '{"verdict":"pass"}', '{"verdict":"pass"}']);
    assert.equal(turn.status, 'failed');
    assert.match(turn.error, /^output_invalid: .*must have required property 'count'/);
    // a fourth request would get the fake's default prose reply: three means two re-asks, no more
    assert.equal(requests.length, 3);
    assert.equal(harness.events.ofTurn(turn.id).some((event) => event.type === 'turn.result'), false);
  });
});

describe('outputSchema refused at the edge', () => {
  const harness = useFakeServer();

  /** A schema whose compact JSON is exactly `bytes` bytes: an object schema padded in its description. */
  function schemaOfBytes(bytes: number): Record<string, unknown> {
    const schema = { type: 'object', description: '' };
    schema.description = 'x'.repeat(bytes - Buffer.byteLength(JSON.stringify(schema)));
    assert.equal(Buffer.byteLength(JSON.stringify(schema)), bytes);
    return schema;
  }

  async function submit(body: Record<string, unknown>) {
    const session = await harness.newSession();
    const before = harness.fake.requests.length;
    const response = await harness.server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'go', ...body } });
    return { response, session, providerCalls: () => harness.fake.requests.length - before };
  }

  async function assertRefused(body: Record<string, unknown>, status: number, code: string, message?: RegExp) {
    const { response, session } = await submit(body);
    assert.equal(response.status, status, response.text);
    assert.equal(response.json.error.code, code);
    assert.ok(response.json.error.requestId);
    if (message) assert.match(response.json.error.message, message);
    const turns = (await harness.server.request('GET', `/v1/turns?sessionId=${session.id}`)).json;
    assert.deepEqual(turns.data, [], 'nothing was recorded');
  }

  it('takes a schema of exactly 64 KiB and refuses one byte more', async () => {
    const atLimit = await submit({ outputSchema: schemaOfBytes(65_536) });
    assert.equal(atLimit.response.status, 202, atLimit.response.text);
    await waitForTurn(harness.server, atLimit.response.json.id);
    await assertRefused({ outputSchema: schemaOfBytes(65_537) }, 422, 'invalid_output_schema', /65537 bytes/);
  });

  it('refuses a schema that does not describe an object', async () => {
    await assertRefused({ outputSchema: { type: 'string' } }, 422, 'invalid_output_schema', /"type": "object"/);
    await assertRefused({ outputSchema: {} }, 422, 'invalid_output_schema');
  });

  it('refuses what is not a JSON object at all with the body rules', async () => {
    await assertRefused({ outputSchema: 'object' }, 400, 'invalid_json');
    await assertRefused({ outputSchema: [{ type: 'object' }] }, 400, 'invalid_json');
  });

  it('refuses a schema Ajv does not accept, and a pattern RE2 cannot run', async () => {
    await assertRefused({ outputSchema: { type: 'object', properties: { a: { type: 'no-such-type' } } } }, 422, 'invalid_output_schema', /not a schema/);
    await assertRefused({ outputSchema: { type: 'object', properties: { a: { type: 'string', pattern: '^(a+)+(?=b)$' } } } }, 422, 'invalid_output_schema');
  });

  it('refuses a schema on a steer', async () => {
    await assertRefused({ outputSchema: { type: 'object' }, steer: true }, 422, 'invalid_output_schema', /steer/);
  });

  it('counts the schema in the idempotency digest', async () => {
    const clientRequestId = '0b5d2f7e-8a43-4c1e-9f1e-2a7d4c9b8e11';
    const { response, session } = await submit({ clientRequestId, outputSchema: { type: 'object' } });
    assert.equal(response.status, 202);
    await waitForTurn(harness.server, response.json.id);
    const again = await harness.server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'go', clientRequestId, outputSchema: { type: 'object', required: ['a'] } } });
    assert.equal(again.status, 409);
    assert.equal(again.json.error.code, 'idempotency_conflict');
  });
});

describe('outputSchema in the built server (bin/agentd.js: the bundle and its schema worker)', () => {
  it('compiles in the worker thread, validates the answer and fails a bad schema with the envelope', async () => {
    const fake = await startFakeProvider();
    const state = mkdtempSync(join(tmpdir(), 'agentd-structured-built-'));
    writeFileSync(join(state, 'models.json'), JSON.stringify(fakeProviderModels(fake.baseUrl)));
    const agentd = await startAgentd(['--port', '0', '--state-dir', state, '--workspace-root', state, '--models-file', join(state, 'models.json')]);
    try {
      const post = async (path: string, body: unknown) => {
        const response = await fetch(`${agentd.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        return { status: response.status, json: (await response.json()) as any };
      };
      const session = (await post('/v1/sessions', { model: 'fake-chat' })).json;
      const refused = await post(`/v1/sessions/${session.id}/turns`, { input: 'x', outputSchema: { type: 'object', properties: { a: { type: 'bogus' } } } });
      assert.equal(refused.status, 422);
      assert.match(refused.json.error.message, /not a schema agentd can use: .*type/);
      fake.enqueue({ kind: 'reply', text: 'nope' }, { kind: 'reply', text: '{"verdict":"pass","count":1}' });
      const turn = await post(`/v1/sessions/${session.id}/turns`, { input: 'Judge', outputSchema: SCHEMA });
      assert.equal(turn.status, 202, JSON.stringify(turn.json));
      let result: any;
      while ((result = await fetch(`${agentd.url}/v1/turns/${turn.json.id}/result`)).status === 409) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual((await result.json()).output.result, { verdict: 'pass', count: 1 });
    } finally {
      await agentd.stop();
      await fake.close();
      rmSync(state, { recursive: true, force: true });
    }
  });
});
