import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxClient } from '../../src/exec/sandbox-client.ts';
import { programOnPath } from '../support/programs.ts';
import { runnerCommand, scratchDirectory } from './support.ts';

/** Starts the runner with one guarantee made unavailable; returns its single stdout line and exit code. */
function startWith(env: NodeJS.ProcessEnv) {
  const workspace = scratchDirectory();
  const [executable, ...args] = runnerCommand(workspace);
  const result = spawnSync(executable, args, { env: { PATH: process.env.PATH, ...env }, encoding: 'utf8', timeout: 30_000, input: '' });
  return { status: result.status, lines: result.stdout.trim().split('\n').map((line) => JSON.parse(line)), workspace };
}

describe('a host that cannot give a guarantee', () => {
  const cases: [string, NodeJS.ProcessEnv, RegExp][] = [
    ['bwrap', { AGENTD_SANDBOX_BWRAP: '/nonexistent/bwrap' }, /^bwrap$/],
    ['nftables', { AGENTD_SANDBOX_NFT: '/nonexistent/nft' }, /^nftables$/],
    ['slirp4netns', { AGENTD_SANDBOX_SLIRP4NETNS: '/nonexistent/slirp4netns' }, /^slirp4netns$/],
    ['user namespaces', { AGENTD_SANDBOX_UNSHARE: programOnPath('false') }, /^(user|network)_namespaces$/],
    ['runsc (gvisor runtime)', { AGENTD_SANDBOX_RUNTIME: 'gvisor', AGENTD_SANDBOX_RUNSC: '/nonexistent/runsc' }, /^runsc$/],
    ['a runsc that can run a container (gvisor runtime)', { AGENTD_SANDBOX_RUNTIME: 'gvisor', AGENTD_SANDBOX_RUNSC: programOnPath('false') }, /^runsc$/],
    ['a runsc platform it knows (gvisor runtime)', { AGENTD_SANDBOX_RUNTIME: 'gvisor', AGENTD_SANDBOX_RUNSC_PLATFORM: 'vmware' }, /^runsc$/],
    ['a runtime it knows', { AGENTD_SANDBOX_RUNTIME: 'runc' }, /^runtime$/],
  ];
  for (const [guarantee, env, missing] of cases) {
    it(`refuses to start without ${guarantee}, naming it, and never says ready`, () => {
      const { status, lines } = startWith(env);
      assert.equal(status, 1);
      assert.equal(lines.length, 1);
      assert.equal(lines[0].type, 'unavailable');
      assert.match(lines[0].missing, missing);
      assert.ok(lines[0].message.length > 10);
    });
  }

  it('refuses a cgroup root without the memory controller', () => {
    const fakeRoot = scratchDirectory('agentd-fake-cgroup-');
    for (const controller of ['cpu', 'pids']) mkdirSync(join(fakeRoot, controller));
    const { status, lines } = startWith({ AGENTD_SANDBOX_CGROUP_ROOT: fakeRoot });
    assert.equal(status, 1);
    assert.equal(lines[0].missing, 'cgroup:memory');
  });

  it('runs nothing on the host when a command is sent anyway', async () => {
    const workspace = scratchDirectory();
    const client = new SandboxClient({ command: runnerCommand(workspace), env: { PATH: process.env.PATH, AGENTD_SANDBOX_NFT: '/nonexistent/nft' } });
    await assert.rejects(client.call({ type: 'run', shell: 'touch /workspace/ran-on-host' }), (error: Error & { code?: string }) => {
      assert.equal(error.code, 'sandbox_unavailable');
      assert.match(error.message, /nftables/);
      return true;
    });
    assert.deepEqual(readdirSync(workspace), []);
    await client.close();
  });
});
