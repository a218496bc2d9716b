/**
 * A server started with no API key and no models file says so at start-up, instead of staying
 * silent until the first session fails with 503.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { slug } from 'github-slugger';
import { http } from '../support/http.ts';
import { readMarkdown } from '../docs/markdown.ts';
import { logLines, startAgentd } from './agentd-process.ts';

const README = new URL('../../README.md', import.meta.url).pathname;
const WARN = 40;

function scratch(): string {
  return realpathSync(mkdtempSync(join(tmpdir(), 'agentd-empty-catalog-')));
}

describe('start-up with an empty model catalog', () => {
  it('logs one warning that says how to add a model, naming a README section that exists', async () => {
    const dir = scratch();
    const agentd = await startAgentd(['--port', '0', '--state-dir', dir, '--workspace-root', dir]);
    try {
      const warnings = logLines(agentd.stdout()).filter((line) => line.level === WARN);
      assert.equal(warnings.length, 1, agentd.stdout());
      const advice = warnings[0].msg;
      assert.match(advice, /OPENAI_API_KEY/);
      assert.match(advice, /ANTHROPIC_API_KEY/);
      assert.match(advice, /--models-file/);
      const section = advice.match(/README\.md, section "([^"]+)"/)?.[1];
      assert.ok(section, advice);
      assert.ok(readMarkdown(README).anchors.has(slug(section)), `README has no section "${section}"`);

      // what the warning announces is what a client then gets
      const session = await http('POST', `${agentd.url}/v1/sessions`, { body: {} });
      assert.equal(session.status, 503);
      assert.equal(session.json.error.code, 'model_catalog_empty');
    } finally {
      await agentd.stop();
    }
  });

  it('logs each refused create as one warning line naming the code, never an error with a stack', async () => {
    const dir = scratch();
    const agentd = await startAgentd(['--port', '0', '--state-dir', dir, '--workspace-root', dir]);
    const requestIds: string[] = [];
    try {
      for (let attempt = 0; attempt < 2; attempt++) {
        const refused = await http('POST', `${agentd.url}/v1/sessions`, { body: {} });
        assert.equal(refused.status, 503);
        requestIds.push(refused.json.error.requestId);
      }
    } finally {
      await agentd.stop();
    }
    const lines = logLines(agentd.stdout());
    for (const requestId of requestIds) {
      const ofRequest = lines.filter((line) => line.reqId === requestId);
      assert.equal(ofRequest.length, 1, JSON.stringify(ofRequest));
      assert.deepEqual(
        { level: ofRequest[0].level, msg: ofRequest[0].msg, code: ofRequest[0].code, status: ofRequest[0].status, route: ofRequest[0].route },
        { level: WARN, msg: 'request', code: 'model_catalog_empty', status: 503, route: '/v1/sessions' },
      );
    }
    assert.deepEqual(lines.filter((line) => line.level > WARN), [], 'nothing at error');
    assert.ok(!agentd.stdout().includes('"stack"'), 'no stack anywhere');
  });

  it('does not warn when a models file gives a model, nor when a key adds the built-in ones (and never logs the key)', async () => {
    const dir = scratch();
    const modelsFile = join(dir, 'models.json');
    writeFileSync(modelsFile, JSON.stringify({
      connections: [{ id: 'local', provider: 'local', dialect: 'openai-chat', baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv: null }],
      models: [{ id: 'local-model', connection: 'local', transportModel: 'local-model' }],
    }));
    const withFile = await startAgentd(['--port', '0', '--state-dir', dir, '--workspace-root', dir, '--models-file', modelsFile]);
    await withFile.stop();
    assert.deepEqual(logLines(withFile.stdout()).filter((line) => line.level >= WARN), []);

    const key = 'sk-readme-test-key-that-must-not-be-logged';
    const withKey = await startAgentd(['--port', '0', '--state-dir', dir, '--workspace-root', dir], { OPENAI_API_KEY: key });
    await withKey.stop();
    assert.deepEqual(logLines(withKey.stdout()).filter((line) => line.level >= WARN), []);
    assert.ok(!withKey.stdout().includes(key));
  });
});
