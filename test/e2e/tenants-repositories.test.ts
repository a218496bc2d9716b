/**
 * Repository sessions of tenants with a sandbox runner, by attack (CONTRACT.md §17, issue 27):
 * what tenant A controls (its files, its repository, its git configuration, its symlinks, the URL
 * it names) never makes the server run A's commands on the host, lend A the operator's
 * credentials or network, read or write tenant B's files, or hold B's requests.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeProvider } from '../support/fake-provider.ts';
import { git, makeRepository } from '../support/git.ts';
import { waitForTenantTurn, type TenantClient, type TenantServer } from '../tenancy/support/tenant-server.ts';
import { useTenantsOnFakeProvider } from '../tenancy/support/tenants-on-fake-provider.ts';
import { runnerScript } from './sandbox-support.ts';

const CANARY = 'canary-of-tenant-b-52e1';
/** After a long synchronous step of the test (which shares the server's event loop): let it see the keep-alive connections the server closed meanwhile. */
const letSocketsSettle = () => new Promise((resolve) => setTimeout(resolve, 100));
/** Files the test makes for a tenant become the guest's, as if the tenant had made them (a root runner's guest is the workspace's owner). */
const asTheTenant = (tenant: TenantClient, path: string) => execFileSync('chown', ['-R', `${statSync(tenant.workspaceRoot).uid}:${statSync(tenant.workspaceRoot).gid}`, '--', path]);
const shell = (callId: string, command: string, timeoutMs = 60_000) => ({ name: 'shell', arguments: JSON.stringify({ command, timeout_ms: timeoutMs }), callId });

describe('repository sessions of sandboxed tenants, by attack', () => {
  let fake!: FakeProvider;
  let hosted!: TenantServer;
  let a!: TenantClient;
  let b!: TenantClient;
  const started = useTenantsOnFakeProvider({ tenantCount: 2, args: ['--sandbox-runner', runnerScript()] });
  before(() => {
    ({ fake, hosted } = started);
    [a, b] = hosted.tenants;
    makeRepository(join(b.workspaceRoot, 'b-repo'), { 'b-secret.txt': `${CANARY}\n` });
    writeFileSync(join(b.workspaceRoot, 'b-canary.txt'), `${CANARY}\n`);
  });

  /** Creates a repository session of `tenant` and waits for its setup to end; returns the session and the ending event's data. */
  async function repositorySession(tenant: TenantClient, repository: { url: string; ref?: string }) {
    const events = tenant.events(0);
    await events.opened;
    try {
      const created = await tenant.request('POST', '/v1/sessions', { body: { repository } });
      assert.equal(created.status, 201, JSON.stringify(created.json));
      const session = created.json;
      const ended = await events.waitFor(
        (event) => (event.type === 'session.setup.completed' || event.type === 'session.setup.failed') && event.data.sessionId === session.id,
        120_000,
      );
      const steps = events.events.filter((event) => event.type === 'session.setup.step' && event.data.sessionId === session.id).map((event) => event.data.data);
      return { session, ended: { type: ended.type, ...ended.data.data }, steps };
    } finally {
      events.close();
    }
  }

  /** Starts a turn of `tenant` in a plain session of its own whose model runs `command` in the sandbox. */
  async function startShell(tenant: TenantClient, marker: string, command: string) {
    fake.route(marker, { kind: 'reply', toolCalls: [shell('call_watch', command)] }, { kind: 'reply', text: 'done' });
    const session = (await tenant.request('POST', '/v1/sessions', { body: {} })).json;
    const turn = (await tenant.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: marker } })).json;
    return () => waitForTenantTurn(tenant, turn.id, undefined, 120_000);
  }

  it('clones a repository of the tenant\'s own inside its sandbox, with guest paths (the positive control)', async () => {
    makeRepository(join(a.workspaceRoot, 'own'), { 'own.txt': 'mine\n' });
    asTheTenant(a, join(a.workspaceRoot, 'own'));
    const { session, ended, steps } = await repositorySession(a, { url: 'own' });
    assert.equal(ended.type, 'session.setup.completed', JSON.stringify(ended));
    assert.equal(readFileSync(join(session.cwd, 'own.txt'), 'utf8'), 'mine\n');
    assert.match(steps[0].command, /^git clone -- file:\/\/\/workspace\/own\/\.git \/workspace\/\.agentd-checkouts\/[0-9a-f-]+\.partial$/);
    assert.ok(!steps.some((step) => step.command.includes(a.workspaceRoot)), 'no host path is shown');
  });

  it('serves no other tenant\'s repository through git\'s suffix search (garbage HEAD, objects/, and evil.git linking to B)', async () => {
    const evil = join(a.workspaceRoot, 'evil');
    mkdirSync(join(evil, 'objects'), { recursive: true });
    writeFileSync(join(evil, 'HEAD'), 'garbage\n');
    symlinkSync(join(b.workspaceRoot, 'b-repo'), join(a.workspaceRoot, 'evil.git'));
    const { session, ended } = await repositorySession(a, { url: 'evil' });
    assert.equal(ended.type, 'session.setup.failed', JSON.stringify(ended));
    assert.match(ended.message, /not a git repository/);
    assert.equal(existsSync(join(session.cwd, 'b-secret.txt')), false);
    const everything = JSON.stringify(fake.requests.map((request) => request.body)) + JSON.stringify(ended);
    assert.ok(!everything.includes(CANARY));
  });

  describe('a loopback git server and the operator\'s stored credentials', () => {
    let server!: Server;
    let port = 0;
    const seen: { url: string; authorization: string | null }[] = [];
    let savedHome: string | undefined;
    let home = '';
    before(async () => {
      server = createServer((request, response) => {
        seen.push({ url: request.url ?? '', authorization: request.headers.authorization ?? null });
        response.writeHead(401, { 'www-authenticate': 'Basic realm="git"' }).end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as { port: number }).port;
      // The operator's HOME holds every kind of stored credential for that server.
      home = mkdtempSync(join(tmpdir(), 'agentd-operator-home-'));
      writeFileSync(join(home, '.netrc'), `machine 127.0.0.1 login operator password netrc-secret\nmachine localhost login operator password netrc-secret\n`);
      writeFileSync(join(home, '.git-credentials'), `http://operator:store-secret@127.0.0.1:${port}\nhttp://operator:store-secret@localhost:${port}\n`);
      writeFileSync(join(home, '.gitconfig'), '[credential]\n\thelper = store\n');
      savedHome = process.env.HOME;
      process.env.HOME = home;
    });
    after(async () => {
      process.env.HOME = savedHome;
      rmSync(home, { recursive: true, force: true });
      await new Promise((resolve) => server.close(resolve));
    });

    for (const host of ['127.0.0.1', 'localhost', '[::ffff:127.0.0.1]']) {
      it(`refuses http://${host}:PORT before anything connects, and sends no credential`, async () => {
        const { ended, steps } = await repositorySession(a, { url: `http://${host}:${port}/repo.git` });
        assert.equal(ended.type, 'session.setup.failed');
        assert.match(ended.message, /loopback, private, link-local or otherwise refused address/);
        assert.deepEqual(steps, [], 'no git command ran');
        assert.deepEqual(seen, [], 'nothing reached the loopback server');
      });
    }
  });

  it('runs no command of the guest\'s on the host when a sandboxed watcher plants a smudge filter in the clone\'s .git/config', async () => {
    const source = join(a.workspaceRoot, 'filtered');
    const files: Record<string, string> = { '.gitattributes': '* filter=evil\n' };
    for (let index = 0; index < 200; index++) files[`file-${index}.txt`] = `${'x'.repeat(20_000)}${index}\n`;
    makeRepository(source, files);
    await letSocketsSettle();
    const hostMarker = join(hosted.fixture.dir, 'smudge-ran-on-the-host');
    // The filter runs from the top of the work tree (<workspace>/.agentd-checkouts/<id>.partial).
    writeFileSync(join(a.workspaceRoot, 'evil.sh'), `#!/bin/sh\necho ran >> ../../smudge-ran\nenv > ../../smudge-env\necho ran > '${hostMarker}'\ncat\n`);
    chmodSync(join(a.workspaceRoot, 'evil.sh'), 0o755);
    asTheTenant(a, source);
    asTheTenant(a, join(a.workspaceRoot, 'evil.sh'));
    const watcher = [
      'end=$(( $(date +%s) + 90 ))',
      'while [ "$(date +%s)" -lt "$end" ] && [ ! -e /workspace/stop-watching ]; do',
      '  for config in /workspace/.agentd-checkouts/*.partial/.git/config; do',
      '    [ -f "$config" ] || continue',
      '    grep -q evil "$config" || { printf \'[filter "evil"]\\n\\tsmudge = ../../evil.sh\\n\' >> "$config"; echo planted; }',
      '  done',
      'done; echo watched',
    ].join('\n');
    const watched = await startShell(a, 'watcher: plant a filter', watcher);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const { session, ended } = await repositorySession(a, { url: 'filtered' });
    writeFileSync(join(a.workspaceRoot, 'stop-watching'), '');
    const turn = await watched();
    assert.equal(turn.status, 'completed');
    assert.equal(ended.type, 'session.setup.completed', JSON.stringify(ended));
    assert.ok(existsSync(join(session.cwd, 'file-1.txt')));
    assert.ok(existsSync(join(a.workspaceRoot, 'smudge-ran')), 'the planted filter ran (inside the sandbox): the race was won');
    assert.equal(existsSync(hostMarker), false, 'the planted filter never ran on the host');
    const environment = readFileSync(join(a.workspaceRoot, 'smudge-env'), 'utf8');
    assert.doesNotMatch(environment, /^HOME=\/root|DATABASE|TOKEN|API_KEY/m);
  });

  it('writes nothing outside A\'s workspace when the guest swaps directories of the half-written tree, and the .partial itself, for links during the checkout', async () => {
    const source = join(a.workspaceRoot, 'wide');
    const files: Record<string, string> = {};
    for (let index = 0; index < 3000; index++) files[`tree/${index % 20}/file-${index}.txt`] = `${index}\n`;
    // a name B already has: a host that wrote through a link would overwrite B's canary
    for (let index = 0; index < 20; index++) files[`tree/${index}/b-canary.txt`] = 'overwritten\n';
    for (let index = 0; index < 20; index++) mkdirSync(join(source, 'tree', String(index)), { recursive: true });
    makeRepository(source, files);
    asTheTenant(a, source);
    await letSocketsSettle();
    const bBefore = readdirSync(b.workspaceRoot).sort();
    const outsideBefore = readdirSync(hosted.fixture.dir).sort();
    // Every directory of the tree git is writing flips to a link to B's workspace (host path) or
    // the fixture's directory; once some did, the .partial directory itself becomes a link to B.
    const swapper = `python3 <<'EOF'
import glob, os, time
targets = ['${b.workspaceRoot}', '${hosted.fixture.dir}']
end = time.time() + 90
swaps = 0
partial_swapped = False
while time.time() < end and not os.path.exists('/workspace/stop-swapping-checkout'):
    open('/workspace/checkout-swapping', 'w').close()
    for directory in glob.glob('/workspace/.agentd-checkouts/*.partial/tree/*'):
        if directory.endswith('.real') or os.path.islink(directory):
            continue
        try:
            os.rename(directory, directory + '.real')
            os.symlink(targets[swaps % 2], directory)
            swaps += 1
            open('/workspace/checkout-swaps', 'w').write(str(swaps))
        except OSError:
            pass
    if swaps >= 5 and not partial_swapped:
        for partial in glob.glob('/workspace/.agentd-checkouts/*.partial'):
            try:
                os.rename(partial, partial + '.real')
                os.symlink(targets[0], partial)
                partial_swapped = True
            except OSError:
                pass
print('swaps', swaps, 'partial', partial_swapped)
EOF`;
    const swapped = await startShell(a, 'swapper: lead the checkout to B', swapper);
    while (!existsSync(join(a.workspaceRoot, 'checkout-swapping'))) await new Promise((resolve) => setTimeout(resolve, 20));
    const { session, ended } = await repositorySession(a, { url: 'wide' });
    writeFileSync(join(a.workspaceRoot, 'stop-swapping-checkout'), '');
    const turn = await swapped();
    assert.equal(turn.status, 'completed');
    const swaps = existsSync(join(a.workspaceRoot, 'checkout-swaps')) ? Number(readFileSync(join(a.workspaceRoot, 'checkout-swaps'), 'utf8')) : 0;
    assert.ok(swaps > 0, `the guest swapped directories while git wrote them: the race was run (setup ended ${JSON.stringify(ended)})`);
    assert.equal(readFileSync(join(b.workspaceRoot, 'b-canary.txt'), 'utf8'), `${CANARY}\n`, 'B\'s canary is untouched');
    assert.deepEqual(readdirSync(b.workspaceRoot).sort(), bBefore, 'nothing was written into B\'s workspace');
    assert.deepEqual(readdirSync(hosted.fixture.dir).sort(), outsideBefore, 'nothing was written beside the workspaces');
    // deleting the session removes the links, not what they point to
    assert.equal((await a.request('DELETE', `/v1/sessions/${session.id}`)).status, 204);
    assert.equal(readFileSync(join(b.workspaceRoot, 'b-canary.txt'), 'utf8'), `${CANARY}\n`);
    assert.ok(existsSync(join(b.workspaceRoot, 'b-repo', 'b-secret.txt')));
  });

  it('deletes a checkout without following a directory swapped for a link to another tenant', async () => {
    const source = join(a.workspaceRoot, 'deep');
    const files: Record<string, string> = {};
    for (let index = 0; index < 3000; index++) files[`tree/${index % 20}/file-${index}.txt`] = `${index}\n`;
    // Names the attacker expects in B's workspace: a path-walking removal that lists a real directory and then unlinks through the link deletes B's file of that name.
    for (let index = 0; index < 20; index++) files[`tree/${index}/b-canary.txt`] = 'decoy\n';
    mkdirSync(source, { recursive: true });
    for (let index = 0; index < 20; index++) mkdirSync(join(source, 'tree', String(index)), { recursive: true });
    makeRepository(source, files);
    asTheTenant(a, source);
    await letSocketsSettle();
    const { session, ended } = await repositorySession(a, { url: 'deep' });
    assert.equal(ended.type, 'session.setup.completed', JSON.stringify(ended));
    // Each directory of the tree flips between itself and a link to B's workspace, as fast as the guest can.
    const swapper = `python3 <<'EOF'
import os, time
os.chdir('/workspace/.agentd-checkouts/${session.id}/tree')
end = time.time() + 60
while time.time() < end and not os.path.exists('/workspace/stop-swapping'):
    open('/workspace/swapping', 'w').close()
    for n in map(str, range(20)):
        try:
            if os.path.isdir(n) and not os.path.islink(n):
                os.rename(n, n + '.real')
                os.symlink('${b.workspaceRoot}', n)
            else:
                os.unlink(n)
                os.rename(n + '.real', n)
        except OSError:
            pass
print('swapped')
EOF`;
    const swapped = await startShell(a, 'swapper: lead the deletion to B', swapper);
    while (!existsSync(join(a.workspaceRoot, 'swapping'))) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal((await a.request('DELETE', `/v1/sessions/${session.id}`)).status, 204);
    writeFileSync(join(a.workspaceRoot, 'stop-swapping'), '');
    await swapped();
    assert.equal(readFileSync(join(b.workspaceRoot, 'b-canary.txt'), 'utf8'), `${CANARY}\n`, 'B\'s files are all there');
    assert.ok(existsSync(join(b.workspaceRoot, 'b-repo', 'b-secret.txt')));
  });

  it('writes a turn\'s attachments as the guest, where its tools read them, and removes them in the sandbox after the turn', async () => {
    const large = Buffer.alloc(5 * 1024 * 1024 + 17, 7);
    const files = [
      { name: 'notes.txt', mimeType: 'text/plain', data: Buffer.from('attached words\n').toString('base64') },
      { name: 'large.bin', mimeType: 'application/octet-stream', data: large.toString('base64') },
    ];
    fake.route('read the attachments', { kind: 'reply', toolCalls: [shell('call_read', 'cat .agentd/attachments/*/notes.txt; wc -c .agentd/attachments/*/large.bin; rm .agentd/attachments/*/notes.txt && echo removable')] }, { kind: 'reply', text: 'read' });
    const session = (await a.request('POST', '/v1/sessions', { body: {} })).json;
    const events = a.events(0);
    await events.opened;
    try {
      const turn = await a.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'read the attachments', files } });
      assert.equal(turn.status, 202, JSON.stringify(turn.json));
      const ended = await waitForTenantTurn(a, turn.json.id, undefined, 120_000);
      assert.equal(ended.status, 'completed', JSON.stringify(ended.error));
      const output = events.events.find((event) => event.type === 'tool.finished' && event.data.turnId === turn.json.id)!.data.data.output;
      assert.match(output, /attached words/);
      assert.match(output, new RegExp(`^${large.length} `, 'm'), 'the large file arrived whole');
      assert.match(output, /removable/, 'the guest owns what was written for it');
      const model = JSON.stringify(fake.requests.at(-2)!.body);
      assert.match(model, /\/workspace\/\.agentd\/attachments\/[0-9a-f-]+\/notes\.txt/, 'the model is told the guest path');
      assert.deepEqual(readdirSync(join(a.workspaceRoot, '.agentd', 'attachments')), [], 'the turn\'s directory is gone');
    } finally {
      events.close();
    }
  });

  it('keeps B\'s /healthz answering while A floods the inspection of a repository of 100,000 symlinks', async () => {
    const links = join(a.workspaceRoot, 'links');
    makeRepository(links, { 'README.md': 'links\n' });
    const many = join(links, '.git', 'many');
    mkdirSync(many);
    for (let index = 0; index < 100_000; index++) symlinkSync('../HEAD', join(many, `link-${index}`));
    await letSocketsSettle();
    const latencies: number[] = [];
    let flooding = true;
    const probe = (async () => {
      while (flooding) {
        const started = performance.now();
        const status = await b.request('GET', '/healthz').then((response) => response.status, (error: Error) => error.message);
        latencies.push(status === 200 ? performance.now() - started : Infinity);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const flood = await Promise.all(Array.from({ length: 6 }, () => a.request('POST', '/v1/sessions', { body: { repository: { url: 'links' } } })));
    flooding = false;
    await probe;
    const worst = Math.max(...latencies);
    assert.ok(worst < 1000, `B's /healthz took up to ${Math.round(worst)} ms while A flooded the inspection (${latencies.length} probes)`);
    for (const response of flood) assert.ok(response.status === 201 || response.status === 422, `answered ${response.status}`);
    rmSync(many, { recursive: true, force: true });
    assert.deepEqual(readdirSync(b.workspaceRoot).sort(), ['b-canary.txt', 'b-repo']);
    assert.equal(git(join(b.workspaceRoot, 'b-repo'), 'status', '--porcelain'), '');
  });
});
