/**
 * Issue 9, file half, attacked through the real server: a catastrophic search pattern, an
 * attachment directory planted as a symlink out of the roots, and local repositories that reach
 * outside the roots through symlinks or indirection files.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { useFakeServer } from '../support/harness.ts';
import { waitForTurn } from '../support/server.ts';
import { makeRepository } from '../support/git.ts';


describe('file tools, search, attachments and checkouts under attack', () => {
  const harness = useFakeServer();
  let outside: string;
  before(() => {
    outside = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-outside-')));
  });
  after(() => rmSync(outside, { recursive: true, force: true }));

  it('a catastrophic search pattern on the JavaScript fallback neither hangs the turn nor the server', async () => {
    const { server, fake } = harness;
    const session = await harness.newSession();
    for (let index = 0; index < 10; index++) writeFileSync(join(server.workspace, `line${index}.txt`), `${'a'.repeat(29)}!\n`.repeat(500));
    fake.enqueue(
      { kind: 'reply', toolCalls: [{ name: 'search', arguments: JSON.stringify({ pattern: '(\\w+)+#$' }), callId: 'call_redos' }] },
      { kind: 'reply', text: 'nothing there' },
    );
    // Without ripgrep on PATH when the turn's tools are made, the fallback runs.
    const path = process.env.PATH;
    process.env.PATH = '/nonexistent';
    let turn;
    try {
      turn = await harness.submit(session.id, 'find it');
      const health = await Promise.race([
        server.request('GET', '/healthz').then((response) => response.status),
        new Promise((resolve) => setTimeout(() => resolve('no answer within 2 s'), 2000)),
      ]);
      assert.equal(health, 200);
      assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
    } finally {
      process.env.PATH = path;
    }
    assert.equal(harness.toolOutputSent('call_redos'), 'No matches.');
  });

  it('refuses to write attachments through a .agentd symlink out of the roots', async () => {
    const { server } = harness;
    const cwd = join(server.workspace, 'attach-project');
    mkdirSync(cwd);
    const target = join(outside, 'planted');
    mkdirSync(target);
    symlinkSync(target, join(cwd, '.agentd'));
    const session = await harness.newSession({ cwd });
    const file = { name: 'notes.txt', mimeType: 'text/plain', data: Buffer.from('attached secret').toString('base64') };
    const submitted = await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'read the file', files: [file] } });
    const final = await waitForTurn(server, submitted.json.id);
    assert.equal(final.status, 'failed');
    assert.match(final.error, /symbolic link/);
    assert.deepEqual(readdirSync(target), [], 'nothing was written outside the roots');
  });

  describe('local repositories reaching outside the roots are refused, nothing is copied', () => {
    let foreign: string;
    before(() => {
      foreign = join(outside, 'foreign');
      makeRepository(foreign, { 'foreign-secret.txt': 'FOREIGN SECRET\n' });
    });

    const attacks: { name: string; prepare: (repository: string) => void }[] = [
      {
        name: '.git/objects and .git/refs are symlinks into a repository outside',
        prepare(repository) {
          for (const part of ['objects', 'refs']) {
            rmSync(join(repository, '.git', part), { recursive: true, force: true });
            symlinkSync(join(foreign, '.git', part), join(repository, '.git', part));
          }
        },
      },
      {
        name: 'a .git file whose gitdir is outside',
        prepare(repository) {
          rmSync(join(repository, '.git'), { recursive: true, force: true });
          writeFileSync(join(repository, '.git'), `gitdir: ${join(foreign, '.git')}\n`);
        },
      },
      {
        name: 'a commondir outside',
        prepare(repository) {
          writeFileSync(join(repository, '.git', 'commondir'), `${join(foreign, '.git')}\n`);
        },
      },
      {
        name: 'an absolute object alternate outside',
        prepare(repository) {
          writeFileSync(join(repository, '.git', 'objects', 'info', 'alternates'), `${join(foreign, '.git', 'objects')}\n`);
        },
      },
      {
        name: 'a relative object alternate outside',
        prepare(repository) {
          const objects = join(repository, '.git', 'objects');
          writeFileSync(join(objects, 'info', 'alternates'), `${relative(objects, join(foreign, '.git', 'objects'))}\n`);
        },
      },
      {
        name: 'an http object alternate',
        prepare(repository) {
          writeFileSync(join(repository, '.git', 'objects', 'info', 'alternates'), 'http://127.0.0.1:9/objects\n');
        },
      },
      {
        name: 'packed-refs deep in the git directory is a symlink outside',
        prepare(repository) {
          symlinkSync(join(foreign, '.git', 'HEAD'), join(repository, '.git', 'packed-refs'));
        },
      },
    ];

    attacks.forEach((attack, index) => {
      it(attack.name, async () => {
        const { server } = harness;
        const repository = join(server.workspace, 'sources', `attack-${index}`);
        makeRepository(repository, { 'own.txt': 'own\n' });
        attack.prepare(repository);
        const response = await server.request('POST', '/v1/sessions', { body: { repository: { url: repository } } });
        assert.equal(response.status, 422);
        assert.equal(response.json.error.code, 'invalid_repository');
        const checkouts = join(server.workspace, '.agentd-checkouts');
        const copied = existsSync(checkouts) ? readdirSync(checkouts, { recursive: true }).map(String) : [];
        assert.ok(!copied.some((entry) => entry.includes('foreign-secret')), 'nothing of the foreign repository was checked out');
      });
    });

    it('still checks out a repository whose links stay inside the roots', async () => {
      const { server, events } = harness;
      const repository = join(server.workspace, 'sources', 'linked-inside');
      const shared = join(server.workspace, 'sources', 'shared');
      makeRepository(shared, { 'shared.txt': 'shared\n' });
      makeRepository(repository, { 'own.txt': 'own\n' });
      writeFileSync(join(repository, '.git', 'objects', 'info', 'alternates'), `${join(shared, '.git', 'objects')}\n`);
      const session = (await server.request('POST', '/v1/sessions', { body: { repository: { url: repository } } })).json;
      await events.waitFor((event) => event.type === 'session.setup.completed' && event.data.sessionId === session.id);
      assert.ok(existsSync(join(session.cwd, 'own.txt')));
    });
  });
});

describe('the server\'s own files inside a workspace root (real server, host tools)', () => {
  const CANARY = 'canary-mcp-5ecre7';
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-secret-root-')));
  const mcpConfig = join(root, 'mcp.json');
  // an MCP config holds the servers' credentials; the operator put it in a directory the model works in
  writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { remote: { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: `Bearer ${CANARY}` } } } }));
  writeFileSync(join(root, 'notes.txt'), 'ordinary notes\n');
  const harness = useFakeServer({ args: ['--workspace-root', root, '--mcp-config', mcpConfig] });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('read_file, list_dir and search never hand it to the model', async () => {
    const session = await harness.newSession({ cwd: root });
    harness.fake.enqueue(
      {
        kind: 'reply',
        toolCalls: [
          { name: 'read_file', arguments: JSON.stringify({ path: mcpConfig }), callId: 'call_read' },
          { name: 'list_dir', arguments: JSON.stringify({ path: root }), callId: 'call_list' },
          { name: 'search', arguments: JSON.stringify({ pattern: 'Authorization', path: root }), callId: 'call_search' },
          { name: 'search', arguments: JSON.stringify({ pattern: 'ordinary', path: root }), callId: 'call_search_notes' },
        ],
      },
      { kind: 'reply', text: 'done' },
    );
    const turn = await harness.submit(session.id, 'look for credentials');
    assert.equal((await waitForTurn(harness.server, turn.id)).status, 'completed');
    const sent = (callId: string) => harness.toolOutputSent(callId) ?? '';
    assert.match(sent('call_read'), /one of agentd's own files/);
    assert.doesNotMatch(sent('call_list'), /mcp\.json/);
    assert.match(sent('call_list'), /notes\.txt/);
    assert.equal(sent('call_search'), 'No matches.');
    assert.match(sent('call_search_notes'), /notes\.txt/);
    const sentToModel = JSON.stringify(harness.fake.requests.map((request) => request.body));
    assert.ok(!sentToModel.includes(CANARY), `the credential never reached the model: ${sentToModel.slice(Math.max(0, sentToModel.indexOf(CANARY) - 300), sentToModel.indexOf(CANARY) + 50)}`);
  });
});

describe('the permissions file inside a workspace root (real server, host tools)', () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-rules-root-')));
  const permissionsFile = join(root, 'permissions.json');
  // the rules the next start obeys: a model that could patch them would choose its own
  const rules = JSON.stringify({ rules: [{ tool: 'shell', pattern: '*', action: 'allow' }, { tool: 'apply_patch', pattern: '*', action: 'allow' }, { tool: 'shell', pattern: 'curl *', action: 'deny' }] }, null, 2);
  writeFileSync(permissionsFile, rules);
  const harness = useFakeServer({ args: ['--workspace-root', root, '--permissions-file', permissionsFile] });
  after(() => rmSync(root, { recursive: true, force: true }));

  it('read_file, apply_patch and the shell can neither read nor rewrite it', async () => {
    const session = await harness.newSession({ cwd: root });
    const widen = `*** Begin Patch\n*** Update File: ${permissionsFile}\n@@\n-    "action": "deny"\n+    "action": "allow"\n*** End Patch`;
    harness.fake.enqueue(
      {
        kind: 'reply',
        toolCalls: [
          { name: 'read_file', arguments: JSON.stringify({ path: permissionsFile }), callId: 'call_read' },
          { name: 'apply_patch', kind: 'custom', arguments: widen, callId: 'call_patch' },
          { name: 'shell', arguments: JSON.stringify({ command: ['bash', '-c', `cat ${permissionsFile}; echo '{"rules":[]}' > ${permissionsFile}`] }), callId: 'call_shell' },
        ],
      },
      { kind: 'reply', text: 'done' },
    );
    const turn = await harness.submit(session.id, 'loosen the rules');
    assert.equal((await waitForTurn(harness.server, turn.id)).status, 'completed');
    const sent = (callId: string) => harness.toolOutputSent(callId) ?? '';
    assert.match(sent('call_read'), /one of agentd's own files/);
    assert.doesNotMatch(sent('call_patch'), /^(Success|Done)/i);
    assert.doesNotMatch(sent('call_shell'), /curl \*/, 'the shell did not read the rules');
    assert.equal(readFileSync(permissionsFile, 'utf8'), rules, 'the rules are as the operator wrote them');
  });
});
