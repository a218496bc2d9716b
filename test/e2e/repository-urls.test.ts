import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../support/server.ts';
import { EventRecorder } from '../support/events.ts';
import { makeRepository } from '../support/git.ts';


describe('repository URLs and refs the server refuses', () => {
  let server: TestServer;
  let outside: string;
  let marker: string;
  before(async () => {
    server = await startTestServer();
    outside = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-outside-repo-')));
    makeRepository(join(outside, 'secret'), { 'README.md': 'hello\n' });
    makeRepository(join(server.workspace, 'inside'), { 'README.md': 'hello\n' });
    marker = join(outside, 'pwned');
  });
  after(async () => {
    await server.close();
    rmSync(outside, { recursive: true, force: true });
  });

  const create = (repository: unknown, extra: Record<string, unknown> = {}) => server.request('POST', '/v1/sessions', { body: { repository, ...extra } });
  const sessionCount = async () => (await server.request('GET', '/v1/sessions?archive=all')).json.data.length;

  /** [why, the repository (url may be filled in once the tree exists), the reason the answer gives] */
  const refused = (): Array<[string, { url: string; ref?: string }, RegExp]> => [
    ['a local path outside every root', { url: join(outside, 'secret') }, /outside every allowed workspace root/],
    ['a file:// URL outside every root', { url: `file://${join(outside, 'secret')}` }, /outside every allowed workspace root/],
    ['a symlink inside the root that leads outside', { url: 'escape' }, /outside every allowed workspace root/],
    ['a work tree whose .git file points outside', { url: join(server.workspace, 'linked') }, /git directory outside/],
    ['a local path that is not a repository', { url: 'plain' }, /not a git repository/],
    ['a local path that does not exist', { url: 'no/such/repository' }, /does not exist/],
    ['the ext:: transport', { url: `ext::sh%-c%touch%${marker}` }, /transport helpers/],
    ['the fd:: transport', { url: 'fd::0' }, /transport helpers/],
    ['a leading dash', { url: `--upload-pack=touch%${marker}` }, /must not start with "-"/],
    ['whitespace', { url: 'https://example.com/a repo.git' }, /whitespace or control characters/],
    ['a control character', { url: 'https://example.com/repo.git\n' }, /whitespace or control characters/],
    ['a backslash before an @ (WHATWG reads 1.2.3.4, git 127.0.0.1)', { url: 'http://1.2.3.4\\@127.0.0.1:9/r.git' }, /backslash/],
    ['a "?" before an @ in the authority', { url: 'http://1.2.3.4?@127.0.0.1:9/r.git' }, /host part is not plain/],
    ['percent-encoding in the host', { url: 'http://127.0.0.%31:9/r.git' }, /host part is not plain/],
    ['a fragment', { url: 'https://example.com/r.git#main' }, /fragment/],
    ['an ftp:// URL', { url: 'ftp://example.com/repo.git' }, /"ftp" scheme is not accepted/],
    ['a password in the URL', { url: 'https://user:secret@example.com/repo.git' }, /credentials/],
    ['an ssh host starting with a dash', { url: 'ssh://-oProxyCommand=touch/repo.git' }, /must not start with "-"/],
    ['an scp-like host starting with a dash', { url: 'git@-oProxyCommand:repo.git' }, /may start with "-"/],
    ['a ref starting with a dash', { url: 'https://example.com/repo.git', ref: '--upload-pack=touch' }, /not a valid/],
    ['a ref with ..', { url: 'https://example.com/repo.git', ref: 'main..other' }, /not a valid/],
    ['a ref with a colon', { url: 'https://example.com/repo.git', ref: 'refs:heads' }, /not a valid/],
    ['a ref ending in .lock', { url: 'https://example.com/repo.git', ref: 'main.lock' }, /not a valid/],
  ];

  it('answers 422 invalid_repository for what it refuses, and creates nothing', async () => {
    symlinkSync(join(outside, 'secret'), join(server.workspace, 'escape'));
    mkdirSync(join(server.workspace, 'linked'));
    writeFileSync(join(server.workspace, 'linked', '.git'), `gitdir: ${join(outside, 'secret', '.git')}\n`);
    mkdirSync(join(server.workspace, 'plain'));
    const before = await sessionCount();
    for (const [why, repository, reason] of refused()) {
      const response = await create(repository);
      assert.equal(response.status, 422, why);
      assert.equal(response.json.error.code, 'invalid_repository', why);
      assert.match(response.json.error.message, reason, why);
    }
    assert.equal(await sessionCount(), before);
    assert.ok(!existsSync(marker), 'no command ran');
    assert.ok(!existsSync(join(server.workspace, '.agentd-checkouts')), 'no checkout was started');
  });

  it('refuses repository together with cwd', async () => {
    const response = await create({ url: join(server.workspace, 'inside') }, { cwd: '.' });
    assert.equal(response.status, 422);
    assert.equal(response.json.error.code, 'repository_with_cwd');
  });

  it('accepts a relative path inside the root and the network forms, which fail only when git runs', async () => {
    const events = new EventRecorder(server.url, { lastEventId: 0 });
    await events.opened;
    try {
      const local = await create({ url: 'inside' });
      assert.equal(local.status, 201);
      await events.waitFor((event) => event.type === 'session.setup.completed' && event.data.sessionId === local.json.id);
      assert.ok(existsSync(join(local.json.cwd, 'README.md')));
      // Port 9 on loopback refuses connections, so these fail fast without leaving the machine.
      for (const url of ['https://127.0.0.1:9/r.git', 'git://127.0.0.1:9/r.git', 'ssh://git@127.0.0.1:9/r.git', 'user@agentd-test.invalid:r.git']) {
        const response = await create({ url, ref: 'release/1.0' });
        assert.equal(response.status, 201, url);
        assert.deepEqual(response.json.repository, { url, ref: 'release/1.0' });
      }
    } finally {
      events.close();
    }
  });
});
