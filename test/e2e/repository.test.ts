import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import { useFakeServer } from '../support/harness.ts';
import { EventRecorder, type ReceivedEvent } from '../support/events.ts';
import type { BackendKind } from '../support/backends.ts';
import { git } from '../support/git.ts';


/**
 * A real repository: main has README.md and later.txt, tag v1 is main before later.txt, branch
 * feature adds feature.txt, and `dangling` is a commit no ref reaches (a clone lacks it).
 */
function makeRepository(directory: string) {
  mkdirSync(directory, { recursive: true });
  git(directory, 'init', '-q', '-b', 'main');
  writeFileSync(join(directory, 'README.md'), '# a repository for agentd\n');
  git(directory, 'add', '.');
  git(directory, 'commit', '-q', '-m', 'first');
  git(directory, 'tag', 'v1');
  git(directory, 'checkout', '-q', '-b', 'feature');
  writeFileSync(join(directory, 'feature.txt'), 'feature work\n');
  git(directory, 'add', '.');
  git(directory, 'commit', '-q', '-m', 'feature');
  git(directory, 'checkout', '-q', '-b', 'doomed');
  writeFileSync(join(directory, 'dangling.txt'), 'only in a commit no ref reaches\n');
  git(directory, 'add', '.');
  git(directory, 'commit', '-q', '-m', 'dangling');
  const dangling = git(directory, 'rev-parse', 'HEAD');
  git(directory, 'checkout', '-q', 'main');
  git(directory, 'branch', '-q', '-D', 'doomed');
  writeFileSync(join(directory, 'later.txt'), 'after the tag\n');
  git(directory, 'add', '.');
  git(directory, 'commit', '-q', '-m', 'later');
  return { main: git(directory, 'rev-parse', 'HEAD'), tag: git(directory, 'rev-parse', 'v1'), feature: git(directory, 'rev-parse', 'feature'), dangling };
}

/**
 * A `git` ahead of the real one on PATH (the server's git inherits it) that holds a clone while
 * the gate file exists: lets a test see the setup still running. (A hook cannot do this: the
 * checkout runs git with hooks disabled.)
 */
function installGate(directory: string) {
  const bin = join(directory, 'bin');
  const gate = join(directory, 'gate');
  const realGit = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, 'git'), `#!/bin/sh\ncase " $* " in *" clone "*) while [ -e '${gate}' ]; do sleep 0.05; done;; esac\nexec '${realGit}' "$@"\n`);
  chmodSync(join(bin, 'git'), 0o755);
  process.env.PATH = `${bin}:${process.env.PATH}`;
  return {
    close: () => writeFileSync(gate, ''),
    open: () => rmSync(gate, { force: true }),
    remove: () => rmSync(directory, { recursive: true, force: true }),
  };
}

/** A clone of the test repository takes a second or two on a machine running other suites beside this one. */
const SETUP_WAIT_MS = 30_000;

/** Fails naming `step` when it takes longer than `ms`, instead of a silent wait until the runner's timeout. */
async function within<T>(ms: number, step: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${step}: still waiting after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}

const setupEvents = (events: ReceivedEvent[], sessionId: string) =>
  events.filter((event) => event.type.startsWith('session.setup.') && event.data.sessionId === sessionId);

function suite(backend: BackendKind, full: boolean) {
  describe(`repository sessions on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    let events!: EventRecorder;
    let repository: string;
    let commits: ReturnType<typeof makeRepository>;
    let gate: ReturnType<typeof installGate>;
    const harness = useFakeServer({ backend });
    before(() => {
      ({ fake, server, events } = harness);
      repository = join(server.workspace, 'sources', 'project');
      commits = makeRepository(repository);
      gate = installGate(mkdtempSync(join(tmpdir(), 'agentd-gate-')));
    });
    after(() => gate.remove());

    const create = (body: unknown) => server.request('POST', '/v1/sessions', { body });
    const submit = async (sessionId: string, input: string) => (await server.request('POST', `/v1/sessions/${sessionId}/turns`, { body: { input } })).json;
    const completed = (sessionId: string) => events.waitFor((event) => event.type === 'session.setup.completed' && event.data.sessionId === sessionId, SETUP_WAIT_MS);
    const failed = (sessionId: string) => events.waitFor((event) => event.type === 'session.setup.failed' && event.data.sessionId === sessionId, SETUP_WAIT_MS);

    it('answers 201 at once, keeps the first turn queued until the checkout is done, then runs it in the checkout', async () => {
      gate.close();
      const response = await create({ repository: { url: repository } });
      assert.equal(response.status, 201);
      const session = response.json;
      assert.equal(session.cwd, join(server.workspace, '.agentd-checkouts', session.id));
      assert.deepEqual(session.repository, { url: repository, ref: null });
      await events.waitFor((event) => event.type === 'session.setup.step' && event.data.sessionId === session.id);

      fake.enqueue({ kind: 'reply', toolCalls: [{ name: 'list_dir', arguments: '{}', callId: 'call_ls' }] }, { kind: 'reply', text: 'I see the repository.' });
      const before = fake.requests.length;
      const turn = await submit(session.id, 'What is in this repository?');
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal((await server.request('GET', `/v1/turns/${turn.id}`)).json.status, 'queued', 'the turn waits for the setup');
      assert.ok(!events.ofTurn(turn.id).some((event) => event.type === 'turn.started'));
      assert.equal(fake.requests.length, before, 'no model call before the checkout exists');

      gate.open();
      const done = await completed(session.id);
      assert.deepEqual(done.data.data, { repository, branch: 'main' });
      assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
      const started = events.ofTurn(turn.id).find((event) => event.type === 'turn.started')!;
      assert.ok(Number(started.id) > Number(done.id), 'turn.started comes after session.setup.completed');

      const listing = fake.requests[before + 1].body.input.find((item: any) => item.type === 'function_call_output' && item.call_id === 'call_ls');
      assert.match(listing.output, /README\.md/);
      assert.match(listing.output, /later\.txt/);
      assert.equal(git(session.cwd, 'rev-parse', 'HEAD'), commits.main);

      const setup = setupEvents(events.events, session.id);
      assert.deepEqual(setup.map((event) => event.type), ['session.setup.started', 'session.setup.step', 'session.setup.step', 'session.setup.completed']);
      assert.deepEqual(setup[0].data.data, { repository, branch: 'HEAD' });
      const [running, finished] = [setup[1].data.data, setup[2].data.data];
      assert.deepEqual(Object.keys(running).sort(), ['command', 'operationId', 'status']);
      assert.equal(running.status, 'running');
      assert.match(running.command, /^git clone -- file:\/\/.*\/sources\/project\/\.git /, 'the git directory found in exactly the directory named');
      assert.deepEqual(finished, { ...running, status: 'completed' });
      assert.ok(setup.every((event) => event.data.turnId === null));
    });

    it('checks out a branch and a tag', async () => {
      const branch = (await create({ repository: { url: repository, ref: 'feature' } })).json;
      const tag = (await create({ repository: { url: `file://${repository}`, ref: 'v1' } })).json;
      assert.deepEqual(tag.repository, { url: `file://${repository}`, ref: 'v1' });
      assert.deepEqual((await completed(branch.id)).data.data, { repository, branch: 'feature' });
      assert.deepEqual((await completed(tag.id)).data.data, { repository: `file://${repository}`, branch: 'v1' });
      assert.equal(git(branch.cwd, 'rev-parse', 'HEAD'), commits.feature);
      assert.ok(existsSync(join(branch.cwd, 'feature.txt')));
      assert.equal(git(tag.cwd, 'rev-parse', 'HEAD'), commits.tag);
      assert.ok(!existsSync(join(tag.cwd, 'later.txt')), 'the tag predates later.txt');
      const clone = setupEvents(events.events, branch.id).find((event) => event.type === 'session.setup.step')!.data.data;
      assert.match(clone.command, /^git clone --branch feature -- /);
    });

    if (full) {
      it('checks out a commit, fetching it when no ref reaches it', async () => {
        const dangling = (await create({ repository: { url: repository, ref: commits.dangling } })).json;
        const abbreviated = (await create({ repository: { url: repository, ref: commits.feature.slice(0, 10) } })).json;
        assert.equal((await completed(dangling.id)).data.data.branch, commits.dangling);
        assert.equal((await completed(abbreviated.id)).data.data.branch, commits.feature.slice(0, 10));
        assert.equal(git(dangling.cwd, 'rev-parse', 'HEAD'), commits.dangling);
        assert.ok(existsSync(join(dangling.cwd, 'dangling.txt')));
        assert.equal(git(abbreviated.cwd, 'rev-parse', 'HEAD'), commits.feature);
        const commands = (sessionId: string) =>
          setupEvents(events.events, sessionId).filter((event) => event.type === 'session.setup.step' && event.data.data.status === 'completed').map((event) => event.data.data.command.split(' -- ')[0]);
        assert.deepEqual(commands(dangling.id), ['git clone --no-checkout', `git fetch origin ${commits.dangling}`, `git checkout --detach ${commits.dangling}`]);
        assert.deepEqual(commands(abbreviated.id), ['git clone --no-checkout', `git checkout --detach ${commits.feature.slice(0, 10)}`]);
      });

      it('reports a failed setup, and fails the turns of that session with its message', async () => {
        const session = (await create({ repository: { url: repository, ref: 'no-such-branch' } })).json;
        const failure = await failed(session.id);
        assert.match(failure.data.data.message, /^git clone --branch no-such-branch exited with code 128: .*no-such-branch not found/);
        const step = setupEvents(events.events, session.id).filter((event) => event.type === 'session.setup.step').map((event) => event.data.data.status);
        assert.deepEqual(step, ['running', 'failed']);
        assert.ok(!existsSync(session.cwd) && !existsSync(`${session.cwd}.partial`), 'nothing is left of the attempt');

        for (const input of ['first', 'second']) {
          const turn = await submit(session.id, input);
          const final = await waitForTurn(server, turn.id);
          assert.equal(final.status, 'failed');
          assert.equal(final.error, `setup_failed: ${failure.data.data.message}`);
          assert.ok(!events.ofTurn(turn.id).some((event) => event.type === 'turn.started'));
        }
      });

      it('fails the setup of a server the sandbox may not reach, before git runs', async () => {
        const session = (await create({ repository: { url: 'http://127.0.0.1:9/nothing.git' } })).json;
        assert.match((await failed(session.id)).data.data.message, /127\.0\.0\.1 is a loopback, private, link-local or otherwise refused address/);
        assert.ok(!setupEvents(events.events, session.id).some((event) => event.type === 'session.setup.step'), 'no git command ran');
      });

      it('cancels a turn that waits for the setup', async () => {
        gate.close();
        const session = (await create({ repository: { url: repository } })).json;
        const turn = await submit(session.id, 'wait for it');
        const cancelled = (await server.request('POST', `/v1/turns/${turn.id}/cancel`)).json;
        assert.equal(cancelled.status, 'cancelled');
        assert.equal(cancelled.startedAt, null);
        assert.ok(!events.ofTurn(turn.id).some((event) => event.type === 'turn.started'));
        gate.open();
        await completed(session.id);
      });
    }

    it('DELETE removes the checkout, also while git is still cloning', async () => {
      const session = (await create({ repository: { url: repository } })).json;
      await completed(session.id);
      assert.ok(existsSync(join(session.cwd, 'README.md')));
      assert.equal((await server.request('DELETE', `/v1/sessions/${session.id}`)).status, 204);
      assert.ok(!existsSync(session.cwd));
      assert.equal((await server.request('GET', `/v1/sessions/${session.id}`)).status, 404);

      gate.close();
      const cloning = (await create({ repository: { url: repository } })).json;
      await events.waitFor((event) => event.type === 'session.setup.step' && event.data.sessionId === cloning.id);
      const deleted = await within(30_000, 'DELETE while git clones', server.request('DELETE', `/v1/sessions/${cloning.id}`)).finally(() => gate.open());
      assert.equal(deleted.status, 204);
      assert.match((await failed(cloning.id)).data.data.message, /cancelled/);
      assert.ok(!existsSync(cloning.cwd) && !existsSync(`${cloning.cwd}.partial`));
    });

    it('refuses a fork while the checkout runs, and hands the checkout to a fork when the parent goes', async () => {
      gate.close();
      const parent = (await create({ repository: { url: repository } })).json;
      await events.waitFor((event) => event.type === 'session.setup.step' && event.data.sessionId === parent.id);
      const early = await server.request('POST', `/v1/sessions/${parent.id}/fork`, { body: {} });
      assert.equal(early.status, 409);
      assert.equal(early.json.error.code, 'session_busy');
      gate.open();
      await completed(parent.id);
      const child = (await server.request('POST', `/v1/sessions/${parent.id}/fork`, { body: {} })).json;
      assert.equal(child.cwd, parent.cwd);
      assert.equal((await server.request('DELETE', `/v1/sessions/${parent.id}`)).status, 204);
      assert.ok(existsSync(join(child.cwd, 'README.md')), 'the fork keeps its working directory');
      assert.equal((await server.request('DELETE', `/v1/sessions/${child.id}`)).status, 204);
      assert.ok(!existsSync(child.cwd), 'the last session removes the checkout');
    });
  });
}

suite('sqlite', true);
suite('postgres', false);

describe('repository sessions across a restart', () => {
  it('fails the next turn of a session whose checkout a restart cut short', async () => {
    const first = await startTestServer();
    const repository = join(first.workspace, 'project');
    makeRepository(repository);
    const gate = installGate(mkdtempSync(join(tmpdir(), 'agentd-gate-')));
    gate.close();
    const events = new EventRecorder(first.url, { lastEventId: 0 });
    await events.opened;
    const session = (await first.request('POST', '/v1/sessions', { body: { repository: { url: repository } } })).json;
    await events.waitFor((event) => event.type === 'session.setup.step' && event.data.sessionId === session.id);
    events.close();
    await within(30_000, 'stopping the server while git clones', first.stop()).finally(() => gate.open());
    assert.ok(!existsSync(session.cwd), 'the interrupted checkout never reached its final place');

    const second = await startTestServer({ reuse: { backend: first.backend, workspace: first.workspace } });
    try {
      const turn = (await second.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'hello' } })).json;
      const final = await waitForTurn(second, turn.id);
      assert.equal(final.status, 'failed');
      assert.match(final.error, /^setup_failed: the checkout is missing/);
    } finally {
      gate.remove();
      await second.close();
    }
  });
});
