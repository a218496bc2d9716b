/**
 * Project instructions (CONTRACT.md §19) through the real server on both stores: every AGENTS.md
 * from the workspace root down to the session's cwd, outermost first, reaches the model as
 * instructions after the server's own (never as user text, never in history), in each dialect's
 * place for them; re-read every turn; bounded at 32 KiB with a note; child agents get them;
 * a symbolic link is not followed; --no-project-instructions turns it off.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BACKENDS } from '../support/backends.ts';
import { waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider, FakeRequest } from '../support/fake-provider.ts';
import { useFakeServer } from '../support/harness.ts';
import { readHistoryRange } from '../../src/store/history.ts';

/** The instructions a request carries, in its dialect's place for them. */
function instructionsOf(request: FakeRequest): string {
  if (request.dialect === 'openai-responses') return request.body.instructions;
  if (request.dialect === 'anthropic-messages') return request.body.system.map((block: any) => block.text).join('');
  const system = request.body.messages.filter((message: any) => message.role === 'system');
  assert.equal(system.length, 1);
  return system[0].content;
}

/** Everything else the request sends: the conversation, where no instruction may appear. */
function conversationOf(request: FakeRequest): string {
  if (request.dialect === 'openai-responses') return JSON.stringify(request.body.input);
  if (request.dialect === 'anthropic-messages') return JSON.stringify(request.body.messages);
  return JSON.stringify(request.body.messages.filter((message: any) => message.role !== 'system'));
}

for (const backend of BACKENDS) {
  describe(`project instructions on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    const harness = useFakeServer({ backend, confinement: 'off' });
    before(() => ({ fake, server } = harness));

    async function runTurn(sessionId: string, input: string, steps = [{ kind: 'reply' as const, text: 'ok' }]): Promise<FakeRequest[]> {
      const before = fake.requests.length;
      fake.enqueue(...steps);
      const turn = await harness.submit(sessionId, input);
      const done = await waitForTurn(server, turn.id);
      assert.equal(done.status, 'completed', done.error);
      return fake.requests.slice(before);
    }

    /** A project tree of its own under the workspace root: <root>/<name>/AGENTS.md and <root>/<name>/pkg/AGENTS.md. */
    function project(name: string, outer: string, inner: string): string {
      const directory = join(server.workspace, name, 'pkg');
      mkdirSync(directory, { recursive: true });
      writeFileSync(join(server.workspace, name, 'AGENTS.md'), outer);
      writeFileSync(join(directory, 'AGENTS.md'), inner);
      return `${name}/pkg`;
    }

    for (const model of ['fake-responses', 'fake-anthropic', 'fake-chat']) {
      it(`${model}: root to cwd, outermost first, after the server's own, never as user text`, async () => {
        const name = `tree-${model}`;
        writeFileSync(join(server.workspace, 'AGENTS.md'), 'ROOT-RULE: the workspace root speaks first.');
        const cwd = project(name, `OUTER-RULE-${model}: use tabs.`, `INNER-RULE-${model}: run npm test.`);
        const session = (await server.request('POST', '/v1/sessions', { body: { model, cwd } })).json;
        const [request] = await runTurn(session.id, 'hello');
        const instructions = instructionsOf(request);
        const positions = ['You are a coding agent', 'ROOT-RULE', `OUTER-RULE-${model}`, `INNER-RULE-${model}`].map((text) => instructions.indexOf(text));
        assert.ok(positions.every((position) => position >= 0), instructions);
        assert.deepEqual([...positions].sort((a, b) => a - b), positions, 'the server\'s own, then root, outer, inner');
        assert.ok(instructions.includes(join(server.workspace, name, 'pkg', 'AGENTS.md')), 'each file is named by its path');
        assert.ok(!conversationOf(request).includes('RULE'), 'no instruction is user text');
        const [entry] = await readHistoryRange(server.server.store.db, session.id, 0, 1);
        assert.ok(!JSON.stringify(entry).includes('RULE'), 'nor is it stored in history');
      });
    }

    it('re-read every turn: an edit reaches the next turn, a removed file goes', async () => {
      rmSync(join(server.workspace, 'AGENTS.md'), { force: true });
      const cwd = project('reread', 'FIRST-OUTER', 'FIRST-INNER');
      const session = (await server.request('POST', '/v1/sessions', { body: { cwd } })).json;
      assert.match(instructionsOf((await runTurn(session.id, 'one'))[0]), /FIRST-INNER/);
      writeFileSync(join(server.workspace, 'reread', 'pkg', 'AGENTS.md'), 'SECOND-INNER');
      rmSync(join(server.workspace, 'reread', 'AGENTS.md'));
      const second = instructionsOf((await runTurn(session.id, 'two'))[0]);
      assert.match(second, /SECOND-INNER/);
      assert.doesNotMatch(second, /FIRST-/);
    });

    it('at most 32 KiB in all, then cut with the note; the files past the cut are not read', async () => {
      rmSync(join(server.workspace, 'AGENTS.md'), { force: true });
      const cwd = project('large', `${'a'.repeat(30 * 1024)}`, `INNER-START${'b'.repeat(8 * 1024)}INNER-END`);
      const session = (await server.request('POST', '/v1/sessions', { body: { cwd } })).json;
      const instructions = instructionsOf((await runTurn(session.id, 'big'))[0]);
      assert.match(instructions, /AGENTS\.md truncated/);
      assert.match(instructions, /INNER-START/);
      assert.doesNotMatch(instructions, /INNER-END/);
      const longestRun = (letter: string) => Math.max(...(instructions.match(new RegExp(`${letter}+`, 'g')) ?? ['']).map((run) => run.length));
      const bytes = longestRun('a') + 'INNER-START'.length + longestRun('b');
      assert.equal(bytes, 32 * 1024);
    });

    it('a symbolic link named AGENTS.md is not followed out of the workspace', async () => {
      rmSync(join(server.workspace, 'AGENTS.md'), { force: true });
      const outside = mkdtempSync(join(tmpdir(), 'agentd-outside-'));
      writeFileSync(join(outside, 'secret.txt'), 'HOST-SECRET-LINKED');
      const directory = join(server.workspace, 'linked');
      mkdirSync(directory);
      symlinkSync(join(outside, 'secret.txt'), join(directory, 'AGENTS.md'));

      // the session's own directory swapped for a link to a directory outside, after creation
      writeFileSync(join(outside, 'AGENTS.md'), 'HOST-SECRET-DIRECTORY');
      const swapped = (await server.request('POST', '/v1/sessions', { body: { cwd: 'linked' } })).json;
      rmSync(directory, { recursive: true });
      symlinkSync(outside, directory);
      const [swappedRequest] = await runTurn(swapped.id, 'swapped');
      assert.ok(!JSON.stringify(swappedRequest.body).includes('HOST-SECRET'), 'no file behind a swapped directory');
      rmSync(outside, { recursive: true, force: true });
    });

    it('child agents get the instructions too', async () => {
      const cwd = project('children', 'CHILD-OUTER-RULE', 'CHILD-INNER-RULE');
      const session = (await server.request('POST', '/v1/sessions', { body: { cwd } })).json;
      fake.route('PARENT-instructions',
        { kind: 'reply', toolCalls: [{ name: 'spawn_agent', arguments: JSON.stringify({ label: 'helper', prompt: 'CHILD-instructions: look' }), callId: 'call_child_instructions' }] },
        { kind: 'reply', text: 'done' });
      fake.route('CHILD-instructions', { kind: 'reply', text: 'looked' });
      const before = fake.requests.length;
      const turn = await harness.submit(session.id, 'PARENT-instructions: delegate');
      assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
      const child = fake.requests.slice(before).find((request) => conversationOf(request).includes('CHILD-instructions: look') && !conversationOf(request).includes('PARENT-instructions'));
      assert.ok(child, 'the child made a request of its own');
      assert.match(instructionsOf(child!), /CHILD-OUTER-RULE[\s\S]*CHILD-INNER-RULE/);
    });
  });
}

describe('--no-project-instructions', () => {
  const harness = useFakeServer({ confinement: 'off', args: ['--no-project-instructions'] });

  it('reads no AGENTS.md', async () => {
    const { fake, server } = harness;
    writeFileSync(join(server.workspace, 'AGENTS.md'), 'SHOULD-NOT-BE-SENT');
    const session = (await server.request('POST', '/v1/sessions', { body: {} })).json;
    fake.enqueue({ kind: 'reply', text: 'ok' });
    const turn = await harness.submit(session.id, 'hi');
    assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    const request = fake.requests.at(-1)!;
    assert.match(instructionsOf(request), /You are a coding agent/);
    assert.ok(!JSON.stringify(request.body).includes('SHOULD-NOT-BE-SENT'));
  });
});
