/**
 * `agentd chat` in a script (CONTRACT.md §24): the exit status says whether every turn completed
 * (0), one failed or was cancelled (1), or the chat could not do its work (2); --json prints the
 * events as JSON lines; approvals are answered by --yolo or --deny, by the next input line, or the
 * chat says which flags would have answered them.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fakeProviderModels, startTestServer, type TestServer } from '../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.ts';
import { runPipedChat } from './chat-support.ts';

/** The chat with piped stdin and stdout, `lines` as its whole input; resolves at exit. */
function runPiped(args: string[], cwd: string, lines: string[]) {
  return runPipedChat(args, cwd, lines.map((line) => `${line}\n`).join(''));
}

/** A model reply that runs `command` with the shell tool (which asks for approval), then `answer`. */
function shellThenAnswer(fake: FakeProvider, command: string, answer: string): void {
  fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command }), callId: `call_${fake.requests.length}` }] }, { kind: 'reply', text: answer });
}

describe('agentd chat in a script', () => {
  let fake: FakeProvider;
  let server: TestServer;
  const url = () => server.url;
  before(async () => {
    fake = await startFakeProvider();
    server = await startTestServer({ models: fakeProviderModels(fake.baseUrl), confinement: 'off' });
  });
  after(async () => {
    await server.close();
    await fake.close();
  });

  it('exits 0 when every turn completed, and 1 when one failed, after the rest ran', async () => {
    fake.enqueue({ kind: 'reply', text: 'fine' });
    const fine = await runPiped(['--url', url()], server.workspace, ['first']);
    assert.equal(fine.code, 0, fine.stderr);

    fake.enqueue({ kind: 'http-error', status: 400, body: { error: { message: 'bad request', type: 'invalid_request_error' } } }, { kind: 'reply', text: 'second answered' });
    const failed = await runPiped(['--url', url()], server.workspace, ['this one fails', 'this one completes']);
    assert.equal(failed.code, 1, failed.stdout + failed.stderr);
    assert.match(failed.stdout, /^\[failed/m);
    assert.match(failed.stdout, /second answered/);
  });

  it('--json prints every event as one JSON object a line on stdout, and nothing else there', async () => {
    fake.enqueue({ kind: 'reply', text: 'as json' });
    const { code, stdout, stderr } = await runPiped(['--url', url(), '--json'], server.workspace, ['hello']);
    assert.equal(code, 0, stderr);
    const events = stdout.trimEnd().split('\n').map((line) => JSON.parse(line));
    const types = events.map((event) => event.type);
    assert.ok(types.includes('turn.started') && types.includes('response.text.delta'), types.join(' '));
    assert.equal(types.at(-1), 'turn.completed');
    assert.equal(events.filter((event) => event.type === 'response.text.delta').map((event) => event.data.text).join(''), 'as json');
    assert.ok(events.every((event) => typeof event.id === 'number' && typeof event.sessionId === 'string'));
    assert.match(stderr, /agentd chat · http:\/\/127\.0\.0\.1:\d+/, 'what is said to a person goes to stderr');
  });

  it('--yolo answers every approval allow_once and says so at start', async () => {
    shellThenAnswer(fake, 'echo yolo > yolo.txt', 'written');
    const { code, stdout, stderr } = await runPiped(['--url', url(), '--yolo'], server.workspace, ['write it']);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /--yolo: every approval of this run is answered allow_once, unasked/);
    assert.match(stdout, /→ allow_once \(--yolo\)/);
    assert.equal(readFileSync(join(server.workspace, 'yolo.txt'), 'utf8'), 'yolo\n');
  });

  it('--deny answers every approval deny and says so at start: the command never runs', async () => {
    shellThenAnswer(fake, 'echo denied > denied.txt', 'it was denied');
    const { code, stdout, stderr } = await runPiped(['--url', url(), '--deny'], server.workspace, ['write it']);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /--deny: every approval of this run is answered deny, unasked/);
    assert.match(stdout, /→ deny \(--deny\)/);
    assert.match(stdout, /it was denied/);
    assert.equal(existsSync(join(server.workspace, 'denied.txt')), false);
  });

  it('without them, the next input line answers the request (by its name)', async () => {
    shellThenAnswer(fake, 'echo lined > lined.txt', 'answered by a line');
    const { code, stdout, stderr } = await runPiped(['--url', url()], server.workspace, ['write it', 'allow_once']);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /^\? tool_approval$/m);
    assert.match(stdout, /→ allow_once$/m);
    assert.equal(readFileSync(join(server.workspace, 'lined.txt'), 'utf8'), 'lined\n');
  });

  it('a request left unanswered at the end of the input: names --yolo and --deny, cancels the turn, exit 2', async () => {
    // the call only: the turn is cancelled before a second model request
    fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: 'echo never > never.txt' }), callId: 'call_never' }] });
    const { code, stdout, stderr } = await runPiped(['--url', url()], server.workspace, ['write it']);
    assert.equal(code, 2, stdout + stderr);
    assert.match(stdout, /input ended while a request waits for an answer: give it as the next input line .* or pass --yolo or --deny to answer every approval of the run/);
    const turns = (await server.request('GET', '/v1/turns')).json.data;
    const last = turns[0];
    for (const deadline = Date.now() + 30_000; Date.now() < deadline; ) {
      if ((await server.request('GET', `/v1/turns/${last.id}`)).json.status === 'cancelled') break;
    }
    assert.equal((await server.request('GET', `/v1/turns/${last.id}`)).json.status, 'cancelled', stdout + stderr + JSON.stringify(turns.map((turn: { input: string; status: string }) => [turn.input, turn.status])));
    assert.equal(existsSync(join(server.workspace, 'never.txt')), false);
  });

  it('a plan is shown as its steps, not as the tool\'s JSON', async () => {
    const plan = [{ step: 'read the code', status: 'completed' }, { step: 'write the test', status: 'in_progress' }, { step: 'land it', status: 'pending' }];
    fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'update_plan', arguments: JSON.stringify({ plan }), callId: 'call_plan' }] }, { kind: 'reply', text: 'Planned.' });
    const { code, stdout, stderr } = await runPiped(['--url', url()], server.workspace, ['plan it']);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /^⏺ update_plan\n {2}☑ read the code\n {2}◐ write the test\n {2}☐ land it$/m);
    assert.ok(!stdout.includes('{"plan"'), stdout);
  });

  it('--yolo with --deny is a usage error, exit 2', async () => {
    const { code, stderr } = await runPiped(['--url', url(), '--yolo', '--deny'], server.workspace, []);
    assert.equal(code, 2);
    assert.match(stderr, /--yolo and --deny: give one of the two/);
  });
});
