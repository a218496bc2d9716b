/**
 * `agentd serve --sandbox-runner PATH` through the real CLI: a runner file someone else could
 * change, one the model could replace, one that cannot run, or one whose host lacks a guarantee
 * is refused with exit status 2 and one line before agentd binds; a sound one lets it serve.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { scratchDirectory } from './support.ts';

const AGENTD = new URL('../../bin/agentd.js', import.meta.url).pathname;
const SHIPPED_RUNNER = new URL('../../bin/agentd-sandbox', import.meta.url).pathname;

function serve(args: string[], state = scratchDirectory('agentd-runner-startup-')) {
  const result = spawnSync(process.execPath, [AGENTD, 'serve', '--port', '0', '--state-dir', state, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    timeout: 60_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr.trim() };
}

/** A runner script in its own directory with the given mode. */
function runnerScript(body: string, mode = 0o755): string {
  const path = join(scratchDirectory('agentd-runner-bin-'), 'runner');
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, mode);
  return path;
}

function assertRefused(result: ReturnType<typeof serve>, message: RegExp): void {
  assert.equal(result.status, 2, result.stderr);
  assert.match(result.stderr, message);
  assert.equal(result.stderr.split('\n').length, 1, 'one line');
  assert.doesNotMatch(result.stdout, /listening/, 'never bound');
}

describe('--sandbox-runner at start-up', () => {
  const workspace = scratchDirectory('agentd-runner-workspace-');

  it('refuses a group-writable runner, however sound its program', () => {
    const runner = runnerScript(`exec ${SHIPPED_RUNNER} "$@"`, 0o775);
    assertRefused(serve(['--workspace-root', workspace, '--sandbox-runner', runner]), /^agentd: --sandbox-runner: .*runner is group- or world-writable \(mode 0775\)/);
  });

  it('refuses a world-writable runner', () => {
    const runner = runnerScript(`exec ${SHIPPED_RUNNER} "$@"`, 0o757);
    assertRefused(serve(['--workspace-root', workspace, '--sandbox-runner', runner]), /group- or world-writable \(mode 0757\)/);
  });

  it('refuses a runner inside a workspace root, where the model could replace it, also through a symlink', () => {
    const root = scratchDirectory('agentd-runner-root-');
    mkdirSync(join(root, 'tools'));
    const planted = join(root, 'tools', 'runner');
    copyFileSync(SHIPPED_RUNNER, planted);
    chmodSync(planted, 0o755);
    assertRefused(serve(['--workspace-root', root, '--sandbox-runner', planted]), /^agentd: --sandbox-runner: .* lies inside the workspace root /);
    const link = join(scratchDirectory('agentd-runner-link-'), 'runner');
    spawnSync('ln', ['-s', planted, link]);
    assertRefused(serve(['--workspace-root', root, '--sandbox-runner', link]), /lies inside the workspace root/);
  });

  it('refuses a workspace root that would show the server\'s state dir, token file or MCP config to the sandbox, naming the path', () => {
    const runner = runnerScript(`exec ${SHIPPED_RUNNER} "$@"`);
    const root = scratchDirectory('agentd-runner-exposed-');
    const state = join(root, '.agentd');
    assertRefused(serve(['--workspace-root', root, '--sandbox-runner', runner], state), new RegExp(`^agentd: --sandbox-runner: the workspace root ${root} would show the state dir \\(${state}\\) to the sandbox`));
    const token = join(root, 'service-token');
    writeFileSync(token, 'canary-token-0123456789abcdef0123456789', { mode: 0o600 });
    assertRefused(serve(['--workspace-root', root, '--token-file', token, '--sandbox-runner', runner]), new RegExp(`would show the token file \\(${token}\\)`));
    const mcp = join(root, 'mcp.json');
    writeFileSync(mcp, JSON.stringify({ mcpServers: {} }));
    assertRefused(serve(['--workspace-root', root, '--mcp-config', mcp, '--sandbox-runner', runner]), new RegExp(`would show the MCP config \\(${mcp}\\)`));
    const outer = scratchDirectory('agentd-runner-outer-state-');
    mkdirSync(join(outer, 'project'));
    assertRefused(serve(['--workspace-root', join(outer, 'project'), '--sandbox-runner', runner], outer), /lies inside the state dir/);
  });

  it('refuses a runner that is not executable, not a regular file, or not there', () => {
    assertRefused(serve(['--workspace-root', workspace, '--sandbox-runner', runnerScript('exit 0', 0o644)]), /^agentd: --sandbox-runner: .* is not executable$/);
    assertRefused(serve(['--workspace-root', workspace, '--sandbox-runner', scratchDirectory()]), /is not a regular file$/);
    assertRefused(serve(['--workspace-root', workspace, '--sandbox-runner', '/nonexistent/agentd-sandbox']), /\/nonexistent\/agentd-sandbox does not exist$/);
  });

  it('refuses to start with a runner whose host lacks a guarantee, with the runner\'s own message', () => {
    const runner = runnerScript(`AGENTD_SANDBOX_NFT=/nonexistent/nft exec ${SHIPPED_RUNNER} "$@"`);
    assertRefused(serve(['--workspace-root', workspace, '--sandbox-runner', runner]), /^agentd: --sandbox-runner .*: the sandbox cannot start: nftables: nft is not an executable at \/nonexistent\/nft/);
  });

  it('refuses a program that does not speak the protocol', () => {
    assertRefused(serve(['--workspace-root', workspace, '--sandbox-runner', runnerScript('echo "I am a shell, not a sandbox"; sleep 30')]), /did not begin with a ready line|not a JSON object/);
    assertRefused(serve(['--workspace-root', workspace, '--sandbox-runner', runnerScript('echo oops >&2; exit 4')]), /the sandbox runner ended \(exit code 4\): oops/);
  });

  it('serves in single-user mode with a sound runner (one sandbox for the one boundary)', async () => {
    const state = scratchDirectory('agentd-runner-startup-');
    // a wrapper, so that the checkout's own file modes (a umask 002 clone) do not decide the test
    const runner = runnerScript(`exec ${SHIPPED_RUNNER} "$@"`);
    const child = spawn(process.execPath, [AGENTD, 'serve', '--port', '0', '--state-dir', state, '--workspace-root', workspace, '--sandbox-runner', runner], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = once(child, 'exit');
    const deadline = Date.now() + 45_000;
    while (!stdout.includes('agentd listening') && child.exitCode === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    child.kill('SIGTERM');
    await exited;
    assert.match(stdout, /agentd listening on http:\/\//, stderr);
  });

  it('refuses --sandbox-runtime gvisor on a host without a working runsc, naming runsc', () => {
    const missing = runnerScript(`AGENTD_SANDBOX_RUNSC=/nonexistent/runsc exec ${SHIPPED_RUNNER} "$@"`);
    assertRefused(serve(['--workspace-root', workspace, '--sandbox-runner', missing, '--sandbox-runtime', 'gvisor']), /^agentd: --sandbox-runner .* \(--sandbox-runtime gvisor\): the sandbox cannot start: runsc: runsc is not an executable at \/nonexistent\/runsc/);
    const broken = runnerScript(`AGENTD_SANDBOX_RUNSC=/bin/false exec ${SHIPPED_RUNNER} "$@"`);
    assertRefused(serve(['--workspace-root', workspace, '--sandbox-runner', broken, '--sandbox-runtime', 'gvisor']), /\(--sandbox-runtime gvisor\): the sandbox cannot start: runsc: runsc cannot run a container here/);
  });

  it('serves with --sandbox-runtime gvisor and says at start-up which runtime confines the tools', async () => {
    const state = scratchDirectory('agentd-runner-startup-');
    const child = spawn(process.execPath, [AGENTD, 'serve', '--port', '0', '--state-dir', state, '--workspace-root', workspace, '--sandbox-runner', runnerScript(`exec ${SHIPPED_RUNNER} "$@"`), '--sandbox-runtime', 'gvisor'], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    const exited = once(child, 'exit');
    const deadline = Date.now() + 60_000;
    while (!stdout.includes('agentd listening') && child.exitCode === null && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    child.kill('SIGTERM');
    await exited;
    const ready = stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line)).find((line) => line.msg === 'sandbox runner ready');
    assert.equal(ready?.sandboxRuntime, 'gvisor', stdout);
  });
});
