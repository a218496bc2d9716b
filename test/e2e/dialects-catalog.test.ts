/**
 * The example models file (examples/models.example.json) parses with a connection for every
 * provider the README names, and served by the real server its context windows and efforts come
 * from the file: an effort a model does not list is refused at session creation.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseModelsFile } from '../../src/config/models-file.ts';
import { EFFORTS } from '../../src/domain/effort.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const EXAMPLE_PATH = fileURLToPath(new URL('../../examples/models.example.json', import.meta.url));
const EXAMPLE_TEXT = readFileSync(EXAMPLE_PATH, 'utf8');
const EXAMPLE = JSON.parse(EXAMPLE_TEXT);

/** Every key variable the example names, with a distinct value so each can be traced. */
const KEY_ENV: Record<string, string> = Object.fromEntries(
  EXAMPLE.connections.filter((connection: any) => connection.apiKeyEnv).map((connection: any) => [connection.apiKeyEnv, `key-for-${connection.id}`]),
);

describe('the example models file', () => {
  it('parses, with a connection for every documented provider in its dialect', () => {
    const catalog = parseModelsFile(EXAMPLE_PATH, EXAMPLE_TEXT, KEY_ENV);
    const dialects = Object.fromEntries(catalog.connections.map((connection) => [connection.id, connection.dialect]));
    assert.deepEqual(dialects, {
      openai: 'openai-responses',
      anthropic: 'anthropic-messages',
      ollama: 'openai-chat',
      vllm: 'openai-chat',
      llamacpp: 'openai-chat',
      lmstudio: 'openai-chat',
      openrouter: 'openai-chat',
    });
    const keys = Object.fromEntries(catalog.connections.map((connection) => [connection.id, connection.apiKey]));
    assert.deepEqual(keys, {
      openai: 'key-for-openai',
      anthropic: 'key-for-anthropic',
      ollama: null,
      vllm: 'key-for-vllm',
      llamacpp: 'key-for-llamacpp',
      lmstudio: null,
      openrouter: 'key-for-openrouter',
    });
    for (const connection of catalog.connections) {
      assert.ok(catalog.models.some((model) => model.connection === connection.id), `a model for ${connection.id}`);
    }
    for (const model of catalog.models) {
      assert.ok(model.contextWindow !== null && model.contextWindow > 0, `${model.id} has a context window`);
      assert.ok(model.efforts.includes(model.defaultEffort));
    }
    assert.equal(catalog.defaultModelId, EXAMPLE.defaultModel);
  });

  it('parses without any key in the environment: keyless connections are allowed', () => {
    const catalog = parseModelsFile(EXAMPLE_PATH, EXAMPLE_TEXT, {});
    assert.ok(catalog.connections.every((connection) => connection.apiKey === null));
  });

  describe('served by the real server', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ models: EXAMPLE, env: { ...KEY_ENV } });
    });
    after(() => server.close());

    it('lists every model with the context window, efforts and dialect from the file', async () => {
      const listed = (await server.request('GET', '/v1/models')).json.data;
      assert.deepEqual(listed.map((model: any) => model.id), EXAMPLE.models.map((model: any) => model.id));
      for (const model of EXAMPLE.models) {
        const served = listed.find((candidate: any) => candidate.id === model.id);
        const connection = EXAMPLE.connections.find((candidate: any) => candidate.id === model.connection);
        assert.equal(served.contextWindow, model.contextWindow, model.id);
        assert.deepEqual(served.efforts, model.efforts);
        assert.equal(served.defaultEffort, model.defaultEffort ?? model.efforts[0]);
        assert.equal(served.transportModel, model.transportModel);
        assert.equal(served.dialect, connection.dialect);
        assert.equal(served.provider, connection.provider);
        assert.ok(!JSON.stringify(served).includes('key-for-'), 'keys are never listed');
      }
    });

    it('refuses an effort the model does not list, and defaults to the file\'s default effort', async () => {
      for (const model of EXAMPLE.models) {
        const unsupported = EFFORTS.find((effort) => !model.efforts.includes(effort));
        assert.ok(unsupported, `${model.id} lists every effort`);
        const refused = await server.request('POST', '/v1/sessions', { body: { model: model.id, effort: unsupported } });
        assert.equal(refused.status, 422, `${model.id} with ${unsupported}`);
        assert.equal(refused.json.error.code, 'invalid_effort');
        const created = await server.request('POST', '/v1/sessions', { body: { model: model.id } });
        assert.equal(created.status, 201, created.text);
        assert.equal(created.json.effort, model.defaultEffort ?? model.efforts[0]);
        const strongest = model.efforts.at(-1);
        const chosen = await server.request('POST', '/v1/sessions', { body: { model: model.id, effort: strongest } });
        assert.equal(chosen.json.effort, strongest);
      }
    });
  });
});
