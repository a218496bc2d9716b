/**
 * Runs one command inside the tenant's sandbox and reports how it ended. The spawned shell moves
 * itself into a cgroup of the command's own (inside the tenant's), then execs nsenter (the
 * tenant's network) which execs bwrap, so bwrap is the runner's direct child and every process
 * the command starts is in that group.
 *
 * A timeout or cancel kills the group, not just bwrap: bwrap forks the PID namespace's init, which
 * mounts the whole view and only then takes its own session and arms --die-with-parent (right
 * before and after it forks the command). SIGKILL to bwrap during that setup, tens of
 * milliseconds on a loaded machine, left the init and then the command running, holding the
 * output pipes, so the call never ended. The outcome is reported once the group is empty.
 */
import { spawn } from 'node:child_process';
import type { ProcessOutcome } from '../protocol.ts';
import type { TenantCgroup } from '../cgroups/tenant-group.ts';
import { bubblewrapArguments, type TenantView } from '../bubblewrap.ts';
import { GUEST_ENVIRONMENT } from './guest-files.ts';
import type { HostIdentity } from './guest-identity.ts';
import type { Staging } from './staging.ts';
import type { Tools } from './tools.ts';

/** `sh -c` script: write 0 (this shell) into each cgroup.procs given before `--`, then exec the rest. */
const ENTER_CGROUP_THEN_EXEC = 'while [ "$1" != -- ]; do echo 0 > "$1" || exit 125; shift; done; shift; exec "$@"';

/** What the tenant view shows, fixed when the runner starts. */
export type TenantLayout = Pick<TenantView, 'workspace' | 'home' | 'generatedEtc' | 'system'>;

export interface SandboxContext {
  tools: Tools;
  layout: TenantLayout;
  /**
   * The guest's unprivileged host user when the runner is root, else null (the runner's own), and
   * the mount namespace where that user reaches the workspace and home (staging.ts).
   */
  identity: (HostIdentity & { staging: Staging }) | null;
  cgroup: TenantCgroup;
  /** argv prefix that joins the tenant's network namespace */
  enterNetwork: string[];
}

export interface ProcessSpec {
  argv: string[];
  cwd: string;
  timeoutMs: number;
  stdin?: Buffer;
  /** output past this many bytes is dropped and the outcome says outputTruncated */
  outputLimitBytes: number;
  onOutput(stream: 'stdout' | 'stderr', chunk: Buffer): void;
}

export interface RunningProcess {
  cancel(): void;
  done: Promise<ProcessOutcome>;
}

/**
 * A root runner's command enters the runner's staging mount namespace and leaves root (and every
 * capability) in the same step, before it touches the tenant's namespaces.
 */
function dropToGuest(context: SandboxContext): string[] {
  const { identity } = context;
  return identity === null ? [] : identity.staging.enterAsGuest(identity);
}

export function startSandboxedProcess(context: SandboxContext, spec: ProcessSpec): RunningProcess {
  const started = performance.now();
  const oomKillsBefore = context.cgroup.oomKills();
  const group = context.cgroup.commandGroup();
  const { identity, layout } = context;
  const view = identity === null ? layout : { ...layout, workspace: identity.staging.workspace, home: layout.home === null ? null : identity.staging.home };
  const argv = [
    ...group.entryFiles,
    '--',
    ...dropToGuest(context),
    ...context.enterNetwork,
    context.tools.bwrap,
    ...bubblewrapArguments({ view: 'tenant', ...view, command: spec.argv, cwd: spec.cwd, env: GUEST_ENVIRONMENT }),
  ];
  const child = spawn('/bin/sh', ['-c', ENTER_CGROUP_THEN_EXEC, 'sh', ...argv], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { PATH: '/usr/bin:/bin' },
  });
  let timedOut = false;
  let cancelled = false;
  let outputBytes = 0;
  let outputTruncated = false;

  const forward = (stream: 'stdout' | 'stderr') => {
    child[stream]!.on('data', (chunk: Buffer) => {
      if (outputTruncated) return;
      const room = spec.outputLimitBytes - outputBytes;
      if (chunk.length > room) {
        outputTruncated = true;
        chunk = chunk.subarray(0, room);
      }
      outputBytes += chunk.length;
      if (chunk.length > 0) spec.onOutput(stream, chunk);
    });
  };
  forward('stdout');
  forward('stderr');

  child.stdin!.on('error', () => {}); // a command that exits without reading its input
  child.stdin!.end(spec.stdin ?? Buffer.alloc(0));

  const kill = () => {
    child.kill('SIGKILL');
    void group.killAll();
  };
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, spec.timeoutMs);

  const done = new Promise<ProcessOutcome>((resolve) => {
    child.on('error', (error) => {
      spec.onOutput('stderr', Buffer.from(`sandbox: cannot start the command: ${error.message}\n`));
    });
    child.on('close', async (exitCode, signal) => {
      clearTimeout(timer);
      await group.killAll(); // normally empty already: the namespace ends with bwrap
      group.remove();
      resolve({
        exitCode,
        signal,
        timedOut,
        cancelled,
        oomKilled: context.cgroup.oomKills() > oomKillsBefore,
        outputTruncated,
        durationMs: Math.round(performance.now() - started),
      });
    });
  });

  return {
    cancel() {
      cancelled = true;
      kill();
    },
    done,
  };
}
