// Regression (found by scripts/soak.ts): a sandbox whose agentd was SIGKILLed in the instant before
// bwrap armed --die-with-parent kept running. At start-up agentd ends the sandboxes of its state
// dir that no live agentd owns, and leaves others' alone.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBackend } from '../support/backends.ts';
import { startTestServer } from '../support/server.ts';
import { processesWith } from './support/crash-rounds.ts';

/** A bwrap masking `masked`, without --die-with-parent, whose parent has already exited. */
function orphanedSandbox(masked: string, marker: string): void {
  const bwrap = ['bwrap', '--unshare-pid', '--new-session', '--bind', '/', '/', '--dev-bind', '/dev', '/dev', '--proc', '/proc', '--tmpfs', masked, '--', 'bash', '-c', marker];
  execFileSync('setsid', ['bash', '-c', `${bwrap.map((word) => `'${word}'`).join(' ')} >/dev/null 2>&1 &`]);
}

describe('sandboxes orphaned by a killed agentd', () => {
  it('are ended when agentd starts on the same state dir, others are left alone', async () => {
    const backend = await createBackend('sqlite');
    const elsewhere = mkdtempSync(join(tmpdir(), 'agentd-other-state-'));
    const mine = `sleep 61.${Date.now() % 100_000}1`;
    const theirs = `sleep 62.${Date.now() % 100_000}1`;
    orphanedSandbox(backend.stateDir, mine);
    orphanedSandbox(elsewhere, theirs);
    // Wait for the bwraps themselves (argv "--tmpfs <dir> --"): the shell that starts each one also
    // carries the marker, and on a loaded machine a sweep could run before its bwrap exists.
    const bwrapOf = (masked: string) => processesWith(`--tmpfs ${masked} --`);
    const deadline = Date.now() + 10_000;
    while ((bwrapOf(backend.stateDir).length === 0 || bwrapOf(elsewhere).length === 0) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(bwrapOf(backend.stateDir).length > 0 && bwrapOf(elsewhere).length > 0, 'both orphans run');

    const server = await startTestServer({ reuse: { backend, workspace: mkdtempSync(join(tmpdir(), 'agentd-orphan-ws-')) } });
    try {
      const gone = Date.now() + 3_000;
      while (processesWith(mine).length > 0 && Date.now() < gone) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.deepEqual(processesWith(mine), [], "this state dir's orphan is ended");
      assert.ok(processesWith(theirs).length > 0, "another state dir's sandbox is left alone");
    } finally {
      for (const pid of processesWith(theirs)) {
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
