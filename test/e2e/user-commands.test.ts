import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitForTurn } from '../support/server.ts';
import { useFakeServer, type FakeServerHarness } from '../support/harness.ts';

// `!command` (CONTRACT.md §24): a turn whose input is a shell command runs it as the `shell` tool,
// through the policy of the model's calls, and asks the model nothing.

const rulesFile = join(mkdtempSync(join(tmpdir(), 'agentd-user-commands-')), 'permissions.json');
writeFileSync(rulesFile, JSON.stringify({ rules: [{ tool: 'shell', pattern: 'touch *', action: 'deny' }] }));

async function runCommand(harness: FakeServerHarness, sessionId: string, command: string) {
  const submitted = await harness.server.request('POST', `/v1/sessions/${sessionId}/turns`, { body: { input: command, shell: true } });
  assert.equal(submitted.status, 202, JSON.stringify(submitted.json));
  const turn = await waitForTurn(harness.server, submitted.json.id);
  const finished = await harness.events.waitFor((event) => event.type === 'tool.finished' && event.data.turnId === turn.id);
  return { turn, output: String(finished.data.data.output) };
}

describe('!command: a shell command run by the user through the approval policy', () => {
  const harness = useFakeServer({ args: ['--permissions-file', rulesFile] });

  it('runs an allowed command without asking the model, and the next turn sees its call and output', async () => {
    const { fake, server } = harness;
    const session = await harness.newSession();
    const before = fake.requests.length;
    const { turn, output } = await runCommand(harness, session.id, 'echo hi-from-the-user');
    assert.equal(turn.status, 'completed');
    assert.match(output, /hi-from-the-user/);
    assert.equal(fake.requests.length, before, 'the model was asked nothing');
    const stored = (await server.request('GET', `/v1/turns/${turn.id}`)).json;
    assert.equal(stored.input, 'echo hi-from-the-user');
    assert.equal(stored.userText, '!echo hi-from-the-user');

    fake.enqueue({ kind: 'reply', text: 'it printed a greeting' });
    const next = await harness.submit(session.id, 'what did it print?');
    assert.equal((await waitForTurn(server, next.id)).status, 'completed');
    const history = fake.requests.at(-1)!.body.input as any[];
    const call = history.find((item) => item.type === 'function_call' && item.name === 'shell');
    assert.ok(call, JSON.stringify(history));
    assert.deepEqual(JSON.parse(call.arguments), { command: 'echo hi-from-the-user' });
    assert.match(harness.toolOutputSent(call.call_id) ?? '', /hi-from-the-user/);
  });

  it('refuses a command an operator rule denies, with the rule as the reason, and runs nothing', async () => {
    const session = await harness.newSession();
    const { turn, output } = await runCommand(harness, session.id, 'touch made-by-user.txt');
    assert.equal(turn.status, 'completed');
    assert.match(output, /permission rule for shell with pattern "touch \*"/);
    assert.equal(existsSync(join(harness.server.workspace, 'made-by-user.txt')), false);
  });

  it('a prompt that merely starts with ! is a prompt: only the shell field makes a command', async () => {
    const { fake, server } = harness;
    const session = await harness.newSession();
    fake.enqueue({ kind: 'reply', text: 'a prompt' });
    const before = fake.requests.length;
    const turn = await harness.submit(session.id, '!echo not-a-command');
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    assert.equal(fake.requests.length, before + 1);
    const stored = (await server.request('GET', `/v1/turns/${turn.id}`)).json;
    assert.equal(stored.userText, '!echo not-a-command');
  });

  it('a command that is /compact is a command the approval policy asks about, not the context command', async () => {
    const { server } = harness;
    const session = await harness.newSession();
    const submitted = await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: '/compact', shell: true } });
    const request = await harness.nthRequestOf(submitted.json.id, 1);
    assert.equal(request.kind, 'tool_approval');
    assert.match(request.prompt, /\/compact/);
    assert.equal((await harness.resolve(request.id, { decision: 'deny' })).status, 200);
    assert.equal((await waitForTurn(server, submitted.json.id)).status, 'completed');
    const events = harness.events.ofTurn(submitted.json.id).map((event) => event.type);
    assert.ok(!events.includes('model.context.reset'), events.join(' '));
  });

  it('bad bodies get the error envelope', async () => {
    const { server } = harness;
    const session = await harness.newSession();
    const post = (body: unknown) => server.request('POST', `/v1/sessions/${session.id}/turns`, { body });
    const empty = await post({ input: '  ', shell: true });
    assert.equal(empty.status, 422);
    assert.equal(empty.json.error.code, 'empty_input');
    const long = await post({ input: `echo ${'x'.repeat(16_383)}`, shell: true });
    assert.equal(long.status, 400);
    assert.equal(long.json.error.code, 'invalid_json');
    assert.match(long.json.error.message, /at most 16382 characters/);
    const steered = await post({ input: 'ls', shell: true, steer: true });
    assert.equal(steered.status, 400);
    assert.match(steered.json.error.message, /\/steer/);
    const typed = await post({ input: 'ls', shell: 'yes' });
    assert.equal(typed.status, 400);
    assert.equal(typed.json.error.code, 'invalid_json');
    const unknown = await post({ input: 'ls', command: 'ls' });
    assert.equal(unknown.status, 400);
    assert.match(unknown.json.error.message, /unknown property/);
  });

  it('the field is in /openapi.json, marked as an extension', async () => {
    const document = (await harness.server.request('GET', '/openapi.json')).json;
    const createTurn = document.components.schemas.CreateTurn;
    assert.equal(createTurn.properties.shell['x-agentd-extension'], true);
    assert.equal(createTurn.properties.shell.type, 'boolean');
  });
});

describe('!command under --yolo', () => {
  const harness = useFakeServer({ args: ['--yolo'] });

  it('a dangerous command is refused all the same, the model asked nothing', async () => {
    const session = await harness.newSession();
    const before = harness.fake.requests.length;
    const { turn, output } = await runCommand(harness, session.id, 'mkfs.ext4 /dev/sda1');
    assert.equal(turn.status, 'completed');
    assert.match(output, /mkfs\.ext4 rewrites disks or filesystems/);
    assert.equal(harness.fake.requests.length, before);
  });
});
