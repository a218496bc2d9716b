import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { SandboxClient } from '../../src/exec/sandbox-client.ts';
import { guestHostUid, RUNTIMES, sandboxClient, scratchDirectory, shell } from './support.ts';

const CANARY = 'sk-canary-7f3c9a1e-provider-key';

for (const runtime of RUNTIMES) describe(`a sandboxed command (${runtime})`, () => {
  let workspace: string;
  let outside: string;
  let client: SandboxClient;
  /** host files the test plants where a careless sandbox would show them: the home and a top-level directory */
  const planted: string[] = [];

  before(async () => {
    workspace = scratchDirectory();
    outside = scratchDirectory('agentd-sandbox-outside-');
    writeFileSync(join(outside, 'secret.txt'), 'host secret');
    for (const directory of [mkdtempSync(join(homedir(), '.agentd-confinement-')), mkdtempSync('/agentd-confinement-')]) {
      writeFileSync(join(directory, 'secret.txt'), 'host secret');
      planted.push(join(directory, 'secret.txt'));
    }
    // the runner inherits credentials the way a careless server would hand them down
    client = sandboxClient(workspace, { OPENAI_API_KEY: CANARY, DATABASE_URL: `postgres://u:${CANARY}@db/x`, SERVICE_TOKEN: CANARY }, runtime);
    await client.start();
  });
  after(async () => {
    await client.close();
    for (const file of planted) rmSync(join(file, '..'), { recursive: true, force: true });
  });

  it('cannot read host files outside the workspace', async () => {
    const attempts = [join(outside, 'secret.txt'), '/etc/shadow', `/proc/${process.pid}/environ`, ...planted];
    for (const path of attempts) assert.ok(existsSync(path), `${path} exists on the host, so not seeing it proves something`);
    for (const path of attempts) {
      const { output, result } = await shell(client, `cat ${path}`);
      assert.notEqual(result.outcome?.exitCode, 0, path);
      assert.match(output, /No such file or directory/, path);
      assert.doesNotMatch(output, /host secret/);
    }
    const read = await client.call({ type: 'read', path: join(outside, 'secret.txt') });
    assert.equal(read.ok, false);
  });

  it('cannot reach a host file through a symlink planted in the workspace', async () => {
    await shell(client, `ln -s ${join(outside, 'secret.txt')} /workspace/escape`);
    const read = await client.call({ type: 'read', path: '/workspace/escape' });
    assert.equal(read.ok, false);
    assert.equal(read.contentBase64, undefined);
  });

  it('sees none of the host processes and no credential in its environment', async () => {
    const { output } = await shell(client, 'env; echo ---; cat /proc/[0-9]*/comm');
    const visible = new Set(output.split('---\n')[1].trim().split('\n'));
    // bubblewrap's namespace has its init (bwrap). Under gVisor /proc is the tenant sandbox's (this gVisor cannot mount a /proc
    // per PID namespace): its first process (sh, sleep) and the command's `unshare` show too, all guests of the tenant's own kernel
    const allowed = runtime === 'bubblewrap' ? ['bwrap', 'bash', 'cat'] : ['sh', 'sleep', 'unshare', 'bash', 'cat'];
    for (const name of visible) assert.ok(allowed.includes(name), `visible: ${name}`);
    if (runtime === 'bubblewrap') assert.ok(visible.has('cat') && visible.has('bwrap'), 'the sandbox\'s init and cat itself');
    else assert.ok(visible.has('cat') || visible.has('bash'), 'the command itself');
    assert.doesNotMatch(output, new RegExp(CANARY));
    assert.doesNotMatch(output, /OPENAI|DATABASE_URL|SERVICE_TOKEN/);
    assert.doesNotMatch(output, /^(node|slirp4netns|postgres)/m);
  });

  it('cannot write outside the workspace, and its workspace files belong to the guest\'s host user, never root', async () => {
    const { result } = await shell(client, `echo x > /usr/pwned; echo x > ${outside}/pwned; echo made > /workspace/made.txt; mkdir -p /workspace/d/e`);
    assert.equal(result.outcome?.exitCode, 0);
    assert.throws(() => statSync(join(outside, 'pwned')));
    assert.throws(() => statSync('/usr/pwned'));
    assert.equal(readFileSync(join(workspace, 'made.txt'), 'utf8'), 'made\n');
    assert.equal(statSync(join(workspace, 'made.txt')).uid, guestHostUid());
    assert.equal(statSync(join(workspace, 'd/e')).uid, guestHostUid());
    assert.notEqual(guestHostUid(), 0);
  });

  it('a root runner\'s guest is no host root: kernel settings, sysrq and mounts are refused, the host value unchanged', async () => {
    const setting = '/proc/sys/kernel/core_uses_pid';
    const hostValue = readFileSync(setting, 'utf8').trim();
    const flipped = hostValue === '1' ? '0' : '1';
    try {
      const { output } = await shell(client, [
        `echo ${flipped} > ${setting} && echo FLIPPED`,
        'echo h > /proc/sysrq-trigger && echo SYSRQ',
        'echo x > /sys/kernel/pwned && echo SYS',
        'mount -o remount,rw /usr 2>/dev/null && echo REMOUNTED',
        'grep -E "^CapEff" /proc/self/status',
        // PR_GET_NO_NEW_PRIVS, asked of the kernel (gVisor's /proc/self/status has no NoNewPrivs line)
        'python3 -c "import ctypes; print(\'NoNewPrivs:\', ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))"',
      ].join('; '));
      assert.doesNotMatch(output, /FLIPPED|SYSRQ|SYS$|REMOUNTED/m, output);
      assert.match(output, /CapEff:\s+0+$/m);
      assert.match(output, /NoNewPrivs:\s+1$/m);
    } finally {
      const now = readFileSync(setting, 'utf8').trim();
      if (now !== hostValue) writeFileSync(setting, hostValue);
      assert.equal(now, hostValue, 'the host\'s kernel setting is unchanged');
    }
  });

  it('sees no runner pid in its mount table, and a root runner\'s guest not even its temporary directory', async () => {
    const { output } = await shell(client, 'cat /proc/self/mountinfo');
    assert.match(output, / \/etc\/passwd /, 'the generated passwd is a mount of its own');
    assert.doesNotMatch(output, new RegExp(`agentd-sandbox-etc-${client.runnerPid}-`), output);
    // a root runner stages the generated files on a tmpfs of its mount namespace (runner/staging.ts)
    if (process.getuid?.() === 0) assert.doesNotMatch(output, /agentd-sandbox-etc-/, output);
  });

  it('reads, writes, lists and searches inside the workspace', async () => {
    const bytes = Buffer.from([0, 1, 2, 255, 10]);
    const write = await client.call({ type: 'write', path: '/workspace/sub/dir/data.bin', contentBase64: bytes.toString('base64'), createParents: true });
    assert.equal(write.ok, true);
    assert.deepEqual(readFileSync(join(workspace, 'sub/dir/data.bin')), bytes);
    const read = await client.call({ type: 'read', path: '/workspace/sub/dir/data.bin' });
    assert.deepEqual(Buffer.from(read.contentBase64!, 'base64'), bytes);
    mkdirSync(join(workspace, 'src'), { recursive: true });
    writeFileSync(join(workspace, 'src/a.ts'), 'const needle = 1;\nother\n');
    const list = await client.call({ type: 'list', path: '/workspace/src' });
    assert.deepEqual(list.entries, [{ name: 'a.ts', type: 'file', size: 24 }]);
    const search = await client.call({ type: 'search', pattern: 'need+le', path: '/workspace' });
    assert.deepEqual(search.matches, [{ path: '/workspace/src/a.ts', line: 1, text: 'const needle = 1;' }]);
    const cut = await client.call({ type: 'read', path: '/workspace/src/a.ts', maxBytes: 5 });
    assert.equal(Buffer.from(cut.contentBase64!, 'base64').toString(), 'const');
    assert.equal(cut.truncated, true);
  });

  it('runs an argv in a guest cwd and reports a failing exit code', async () => {
    let output = '';
    const result = await client.call({ type: 'run', argv: ['sh', '-c', 'pwd; exit 3'], cwd: '/workspace/src' }, { onOutput: (_s, data) => (output += data) });
    assert.equal(output, '/workspace/src\n');
    assert.equal(result.outcome?.exitCode, 3);
  });
});
