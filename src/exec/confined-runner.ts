/**
 * A CommandRunner that runs every command inside bubblewrap, in the view its request asks for
 * (read-only unless the request says writable), as the leader of its own process group: a cancel
 * or timeout signals bwrap, whose death takes the command's PID namespace, and with it every
 * process the command started, down with it.
 */
import { runInProcessGroup, type CommandRunner, type ProcessGroupOptions } from './process-group.ts';
import { toolEnvironment } from './tool-environment.ts';
import { bubblewrapArguments } from '../sandbox/bubblewrap.ts';
import { hiddenPaths } from '../sandbox/hidden-paths.ts';
import type { SystemEntry } from '../sandbox/system-paths.ts';

export interface ConfinementSettings {
  bubblewrapPath: string;
  system: readonly SystemEntry[];
  /** the server's own files (state dir, token file, models file); masked where they are at each call */
  secretPaths: readonly (string | null)[];
}

export function createConfinedRunner(settings: ConfinementSettings, options: ProcessGroupOptions = {}): CommandRunner {
  return (request) => {
    const view = request.view ?? { writable: false, roots: [] };
    const command = { command: request.argv, cwd: request.cwd, env: toolEnvironment(request.env) };
    const hidden = hiddenPaths(settings.secretPaths);
    const args = bubblewrapArguments(
      view.writable
        ? { view: 'writable', ...command, visible: view.roots, hidden }
        : { view: 'read-only', ...command, visible: view.roots, hidden, system: settings.system },
    );
    return runInProcessGroup({ ...request, argv: [settings.bubblewrapPath, ...args] }, options);
  };
}
