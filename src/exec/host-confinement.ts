/**
 * Start-up detection of host confinement: bubblewrap is used only after a confined `true` really
 * ran, so a missing binary, a kernel without unprivileged user namespaces or a seccomp profile
 * that forbids them is found once, at start-up, and not on the model's first command.
 */
import { execFile } from 'node:child_process';
import type { Logger } from 'pino';
import { toolEnvironment } from './tool-environment.ts';
import type { CommandRunner } from './process-group.ts';
import { bubblewrapArguments, DEFAULT_BUBBLEWRAP_PATH } from '../sandbox/bubblewrap.ts';
import { createConfinedRunner } from './confined-runner.ts';
import { inspectSystemEntries, type SystemEntry } from '../sandbox/system-paths.ts';

export type ConfinementMode = 'auto' | 'off';

export interface HostConfinementOptions {
  mode: ConfinementMode;
  /** the server's own files no command may read: state dir, token file, models file */
  secretPaths: readonly (string | null)[];
  bubblewrapPath?: string;
  logger: Logger;
}

export type HostConfinement = { confined: true; runner: CommandRunner } | { confined: false };

const PROBE_TIMEOUT_MS = 10_000;

export async function detectHostConfinement(options: HostConfinementOptions): Promise<HostConfinement> {
  if (options.mode === 'off') return { confined: false };
  const bubblewrapPath = options.bubblewrapPath ?? DEFAULT_BUBBLEWRAP_PATH;
  const system = inspectSystemEntries();
  const failure = await probeBubblewrap(bubblewrapPath, system);
  if (failure !== null) {
    options.logger.warn(
      { bubblewrap: bubblewrapPath, reason: failure },
      'bubblewrap is unavailable: commands that run without approval fall back to the strict read-only set, unconfined',
    );
    return { confined: false };
  }
  return { confined: true, runner: createConfinedRunner({ bubblewrapPath, system, secretPaths: options.secretPaths }) };
}

/** Runs a confined `true` in the read-only view; null when it worked, else why not. */
export function probeBubblewrap(bubblewrapPath: string, system: readonly SystemEntry[]): Promise<string | null> {
  const args = bubblewrapArguments({ view: 'read-only', command: ['true'], cwd: '/', env: toolEnvironment(), visible: [], hidden: [], system });
  return new Promise((resolve) => {
    execFile(bubblewrapPath, args, { env: toolEnvironment(), timeout: PROBE_TIMEOUT_MS }, (error, _stdout, stderr) => {
      if (!error) resolve(null);
      else resolve(stderr.trim().split('\n')[0] || error.message);
    });
  });
}
