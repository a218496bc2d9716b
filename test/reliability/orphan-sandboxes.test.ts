// Regression (found by scripts/soak.ts): a sandbox whose agentd was SIGKILLed in the instant before
// bwrap armed --die-with-parent kept running. At start-up agentd ends the sandboxes of its state
// dir that no live agentd owns, whatever stage of bwrap's setup they are in, and leaves others'
// alone.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBackend } from '../support/backends.ts';
import { startTestServer } from '../support/server.ts';
import { processesWith } from './support/crash-rounds.ts';

function bwrapArgv(masked: string, marker: string, setup: 'done' | 'held' = 'done'): string[] {
  // --block-fd holds the namespace's init before it takes its own session and arms
  // --die-with-parent, where a busy machine's mounts keep it for a while; the fd never delivers
  const held = setup === 'held' ? ['--block-fd', '9'] : [];
  return ['bwrap', ...held, '--unshare-pid', '--new-session', '--bind', '/', '/', '--dev-bind', '/dev', '/dev', '--proc', '/proc', '--tmpfs', masked, '--', 'bash', '-c', marker];
}

/** A bwrap masking `masked`, without --die-with-parent, whose parent has already exited. */
function orphanedSandbox(masked: string, marker: string, setup: 'done' | 'held' = 'done'): void {
  const fifo = join(mkdtempSync(join(tmpdir(), 'agentd-orphan-fifo-')), 'never-written');
  execFileSync('mkfifo', [fifo]);
  const command = `${bwrapArgv(masked, marker, setup).map((word) => `'${word}'`).join(' ')} 9<>'${fifo}' >/dev/null 2>&1 &`;
  execFileSync('setsid', ['bash', '-c', command]);
}

async function waitFor(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  assert.ok(condition(), what);
}

describe('sandboxes orphaned by a killed agentd', () => {
  it('are ended when agentd starts on the same state dir, also one still being set up; others are left alone', async () => {
    const backend = await createBackend('sqlite');
    const elsewhere = mkdtempSync(join(tmpdir(), 'agentd-other-state-'));
    const stamp = Date.now() % 100_000;
    const mine = `sleep 61.${stamp}1`;
    const mineInSetup = `sleep 61.${stamp}2`;
    const theirs = `sleep 62.${stamp}1`;
    const owned = `sleep 63.${stamp}1`;
    orphanedSandbox(backend.stateDir, mine);
    orphanedSandbox(backend.stateDir, mineInSetup, 'held');
    orphanedSandbox(elsewhere, theirs);
    // a sandbox of this state dir whose parent is a live node process (as a running agentd's are)
    const live = spawn(bwrapArgv(backend.stateDir, owned)[0], bwrapArgv(backend.stateDir, owned).slice(1), { stdio: 'ignore' });
    // Each set up as far as it will get: running its command, or both bwraps there (outer and init).
    await waitFor(() => processesWith(mine).length === 3 && processesWith(theirs).length === 3 && processesWith(owned).length === 3, 'the sandboxes run');
    await waitFor(() => processesWith(mineInSetup).length === 2, 'the held sandbox is in its setup');

    const server = await startTestServer({ reuse: { backend, workspace: mkdtempSync(join(tmpdir(), 'agentd-orphan-ws-')) } });
    try {
      const gone = Date.now() + 3_000;
      while ([...processesWith(mine), ...processesWith(mineInSetup)].length > 0 && Date.now() < gone) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(processesWith(mine), [], "this state dir's orphan is ended");
      assert.deepEqual(processesWith(mineInSetup), [], "this state dir's orphan still in bwrap's setup is ended");
      assert.equal(processesWith(theirs).length, 3, "another state dir's sandbox is left alone");
      assert.equal(processesWith(owned).length, 3, 'a sandbox a live node process owns is left alone, its namespace init included');
    } finally {
      // none armed --die-with-parent: each of their processes is killed
      for (const pid of [...processesWith(theirs), ...processesWith(owned), ...processesWith(mineInSetup)]) {
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await server.close();
    }
  });
});
