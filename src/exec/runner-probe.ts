/**
 * The start-up check of `--sandbox-runner`: the runner is started once on an empty scratch
 * workspace and must print `ready` (after its own feature check) before agentd binds. A runner
 * that says `unavailable`, prints anything else, dies or hangs is refused with its own reason,
 * so a host that cannot confine is found by the operator at start-up, never by a tool call.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runnerEnvironment, SandboxClient, SandboxError } from './sandbox-client.ts';
import type { ReadyLine } from '../sandbox/protocol.ts';

/** The runner's own start includes a confined `true` (under gVisor two containers, about a second each); a loaded host may need a few seconds. */
const PROBE_READY_TIMEOUT_MS = 20_000;

export class SandboxRunnerRefused extends Error {
  constructor(
    readonly runner: string,
    reason: string,
    runtime = 'bubblewrap',
  ) {
    super(`--sandbox-runner ${runner}${runtime === 'bubblewrap' ? '' : ` (--sandbox-runtime ${runtime})`}: ${reason}`);
    this.name = 'SandboxRunnerRefused';
  }
}

/**
 * Resolves with the runner's ready line, or rejects with SandboxRunnerRefused saying why.
 * `runtime` names the one the runner is started with (AGENTD_SANDBOX_RUNTIME), for the refusal.
 */
export async function probeSandboxRunner(runner: string, runtime = 'bubblewrap', readyTimeoutMs = PROBE_READY_TIMEOUT_MS): Promise<ReadyLine> {
  const workspace = mkdtempSync(join(tmpdir(), 'agentd-sandbox-probe-'));
  const client = new SandboxClient({ command: [runner, '--workspace', workspace], env: runnerEnvironment(), readyTimeoutMs });
  try {
    return await client.start();
  } catch (error) {
    const reason = error instanceof SandboxError ? error.message : `cannot start it: ${(error as Error).message}`;
    throw new SandboxRunnerRefused(runner, reason.replace(/\s*\n\s*/g, ' '), runtime);
  } finally {
    await client.close();
    rmSync(workspace, { recursive: true, force: true });
  }
}
