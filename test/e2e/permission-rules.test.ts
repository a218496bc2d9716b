import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitForTurn } from '../support/server.ts';
import { useFakeServer } from '../support/harness.ts';

const rulesFile = join(mkdtempSync(join(tmpdir(), 'agentd-rules-e2e-')), 'permissions.json');
writeFileSync(rulesFile, JSON.stringify({
  rules: [
    { tool: 'shell', pattern: 'touch *', action: 'deny' },
    { tool: 'shell', pattern: 'git status*', action: 'ask' },
    { tool: 'apply_patch', pattern: 'notes/*', action: 'allow' },
    { tool: 'read_file', pattern: 'private/*', action: 'deny' },
  ],
}));

const call = (name: string, callId: string, args: unknown) => ({ name, arguments: JSON.stringify(args), callId });

describe('operator permission rules through the server (--permissions-file)', () => {
  const harness = useFakeServer({ args: ['--permissions-file', rulesFile] });
  const requestsOf = (turnId: string) => harness.events.ofTurn(turnId).filter((event) => event.type === 'request.created');

  it('deny refuses a shell command, even one chained behind another, with the rule pattern in the output and nothing run', async () => {
    const { fake, server } = harness;
    const session = await harness.newSession();
    fake.enqueue({ kind: 'reply', toolCalls: [call('shell', 'call_touch', { command: 'ls && touch made.txt' })] }, { kind: 'reply', text: 'ok' });
    const turn = await harness.submit(session.id, 'make a file');
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    assert.match(harness.toolOutputSent('call_touch') ?? '', /permission rule for shell with pattern "touch \*"/);
    assert.equal(existsSync(join(server.workspace, 'made.txt')), false);
    assert.equal(requestsOf(turn.id).length, 0, 'nobody was asked');
  });

  it('deny refuses a file tool by the path relative to the session cwd', async () => {
    const { fake, server } = harness;
    writeFileSync(join(server.workspace, 'private-key.txt'), 'not under private/\n');
    const session = await harness.newSession();
    fake.enqueue({ kind: 'reply', toolCalls: [call('read_file', 'call_private', { path: './x/../private/key.pem' })] }, { kind: 'reply', text: 'ok' });
    const turn = await harness.submit(session.id, 'read the key');
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    assert.match(harness.toolOutputSent('call_private') ?? '', /pattern "private\/\*"/);
  });

  it('ask asks tool_approval for a command the built-in policy runs unattended', async () => {
    const { fake, server } = harness;
    const session = await harness.newSession();
    fake.enqueue({ kind: 'reply', toolCalls: [call('shell', 'call_status', { command: ['git', 'status'] })] }, { kind: 'reply', text: 'ok' });
    const turn = await harness.submit(session.id, 'status');
    const request = await harness.nthRequestOf(turn.id, 1);
    assert.equal(request.kind, 'tool_approval');
    assert.match(request.prompt, /git status/);
    assert.equal((await harness.resolve(request.id, { decision: 'deny' })).status, 200);
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    assert.match(harness.toolOutputSent('call_status') ?? '', /denied/);
  });

  it('allow runs apply_patch inside notes/ without asking; elsewhere it still asks', async () => {
    const { fake, server } = harness;
    const session = await harness.newSession();
    const patch = '*** Begin Patch\n*** Add File: notes/todo.txt\n+milk\n*** End Patch';
    fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'apply_patch', kind: 'custom', arguments: patch, callId: 'call_notes' }] }, { kind: 'reply', text: 'ok' });
    const turn = await harness.submit(session.id, 'note it');
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    assert.equal(readFileSync(join(server.workspace, 'notes/todo.txt'), 'utf8'), 'milk\n');
    assert.equal(requestsOf(turn.id).length, 0);

    const elsewhere = '*** Begin Patch\n*** Add File: todo.txt\n+milk\n*** End Patch';
    fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'apply_patch', kind: 'custom', arguments: elsewhere, callId: 'call_root' }] }, { kind: 'reply', text: 'ok' });
    const second = await harness.submit(session.id, 'note it at the top');
    const request = await harness.nthRequestOf(second.id, 1);
    assert.equal(request.kind, 'tool_approval');
    await harness.resolve(request.id, { decision: 'deny' });
    assert.equal((await waitForTurn(server, second.id)).status, 'completed');
    assert.equal(existsSync(join(server.workspace, 'todo.txt')), false);
  });
});
