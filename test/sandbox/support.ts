import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxClient } from '../../src/exec/sandbox-client.ts';
import type { ResultLine } from '../../src/sandbox/protocol.ts';
import { DEFAULT_GUEST_HOST_UID } from '../../src/sandbox/runner/guest-identity.ts';

export const RUNNER_SOURCE = new URL('../../src/sandbox/runner/main.ts', import.meta.url).pathname;

export function scratchDirectory(prefix = 'agentd-sandbox-test-'): string {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

/** Who owns the guest's files on the host: never root (a root runner hands a root-owned workspace to a dedicated user). */
export function guestHostUid(): number {
  return process.getuid!() === 0 ? DEFAULT_GUEST_HOST_UID : process.getuid!();
}

/** The runner from source (through tsx), with the given workspace and extra environment. */
export function runnerCommand(workspace: string): string[] {
  return [process.execPath, '--import', 'tsx', RUNNER_SOURCE, '--workspace', workspace];
}

export function sandboxClient(workspace: string, env: NodeJS.ProcessEnv = {}): SandboxClient {
  return new SandboxClient({ command: runnerCommand(workspace), env: { PATH: process.env.PATH, ...env }, readyTimeoutMs: 20_000 });
}

/** Runs a shell string and returns its whole output and result. */
export async function shell(client: SandboxClient, script: string, timeoutMs = 30_000): Promise<{ output: string; result: ResultLine }> {
  let output = '';
  const result = await client.call({ type: 'run', shell: script, timeoutMs }, { onOutput: (_stream, data) => (output += data) });
  return { output, result };
}
