/**
 * `agentd chat --output-schema FILE` piped (CONTRACT.md §22): every line is a turn with the schema,
 * and what the chat prints of each answer is the result as one line of JSON, for a script to read.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runPipedChat as runChat } from './chat-support.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { fakeProviderModels } from '../support/server.ts';

describe('agentd chat --output-schema, piped', () => {
  let fake: FakeProvider;
  let workspace: string;
  let stateDir: string;
  before(async () => {
    fake = await startFakeProvider();
    workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-chat-schema-ws-')));
    stateDir = mkdtempSync(join(tmpdir(), 'agentd-chat-schema-state-'));
    writeFileSync(join(stateDir, 'models.json'), JSON.stringify(fakeProviderModels(fake.baseUrl)));
    writeFileSync(join(workspace, 'schema.json'), JSON.stringify({ type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] }));
  });
  after(async () => {
    await fake.close();
    rmSync(workspace, { recursive: true, force: true });
    rmSync(stateDir, { recursive: true, force: true });
  });

  const serveArgs = () => ['--models-file', join(stateDir, 'models.json'), '--state-dir', stateDir];

  it('sends the schema with each turn and prints the result as one JSON line', async () => {
    fake.enqueue({ kind: 'reply', text: 'no JSON here' }, { kind: 'reply', text: '{"ok": true}' });
    const before = fake.requests.length;
    const { code, stdout, stderr } = await runChat(['--output-schema', 'schema.json', ...serveArgs()], workspace, 'is it ok?\n');
    assert.equal(code, 0, stderr);
    assert.match(stdout, /^\{"ok":true\}$/m);
    assert.ok(!stdout.includes('no JSON here'), 'the answer text is not printed: the result line is');
    assert.equal(fake.requests[before]!.body.text.format.schema.required[0], 'ok');
  });

  it('refuses a file that is not JSON before starting anything', async () => {
    writeFileSync(join(workspace, 'broken.json'), '{ not json');
    const { code, stderr } = await runChat(['--output-schema', 'broken.json', ...serveArgs()], workspace, '');
    assert.equal(code, 2);
    assert.match(stderr, /--output-schema: .*broken\.json is not JSON/);
  });

  it('says what the server refuses in a schema, and goes on', async () => {
    writeFileSync(join(workspace, 'string.json'), JSON.stringify({ type: 'string' }));
    const { stdout, stderr } = await runChat(['--output-schema', 'string.json', ...serveArgs()], workspace, 'hello\n');
    assert.match(stdout + stderr, /must describe an object/);
  });
});
