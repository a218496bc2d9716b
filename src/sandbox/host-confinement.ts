/**
 * Start-up detection of host confinement: bubblewrap is used only after a confined `true` really
 * ran, so a missing binary, a kernel without unprivileged user namespaces or a seccomp profile
 * that forbids them is found once, at start-up, and not on the model's first command.
 */
import { execFile } from 'node:child_process';
import { realpathSync, statSync } from 'node:fs';
import type { Logger } from 'pino';
import { toolEnvironment } from '../agent/tools/environment.ts';
import type { CommandRunner } from '../agent/tools/process-group.ts';
import { bubblewrapArguments, DEFAULT_BUBBLEWRAP_PATH, type HiddenPath } from './bubblewrap.ts';
import { createConfinedRunner } from './confined-runner.ts';
import { inspectSystemEntries, type SystemEntry } from './system-paths.ts';

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
  const hidden = hiddenPaths(options.secretPaths);
  return { confined: true, runner: createConfinedRunner({ bubblewrapPath, system, hidden }) };
}

/** Runs a confined `true` in the read-only view; null when it worked, else why not. */
export function probeBubblewrap(bubblewrapPath: string, system: readonly SystemEntry[]): Promise<string | null> {
  const args = bubblewrapArguments({ command: ['true'], cwd: '/', env: toolEnvironment(), writable: false, visible: [], hidden: [], system });
  return new Promise((resolve) => {
    execFile(bubblewrapPath, args, { env: toolEnvironment(), timeout: PROBE_TIMEOUT_MS }, (error, _stdout, stderr) => {
      if (!error) resolve(null);
      else resolve(stderr.trim().split('\n')[0] || error.message);
    });
  });
}

/** The existing secret paths, canonical (a mask must sit where the file really is). */
export function hiddenPaths(paths: readonly (string | null)[]): HiddenPath[] {
  const hidden = new Map<string, HiddenPath>();
  for (const path of paths) {
    if (path === null) continue;
    try {
      const canonical = realpathSync(path);
      hidden.set(canonical, { path: canonical, directory: statSync(canonical).isDirectory() });
    } catch {
      // absent (e.g. the default models file): nothing to hide
    }
  }
  const all = [...hidden.values()];
  // A file inside a hidden directory is already covered by the directory's mask.
  return all.filter((entry) => !all.some((other) => other.directory && other !== entry && entry.path.startsWith(`${other.path}/`)));
}
