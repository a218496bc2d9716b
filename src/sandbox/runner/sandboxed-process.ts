/**
 * Runs one command inside the tenant's sandbox and reports how it ended. The spawned shell moves
 * itself into a cgroup of the command's own (inside the tenant's), then execs the runtime's argv
 * (runtimes/: nsenter and bwrap, or setpriv, nsenter and runsc), so the runtime is the runner's
 * direct child and every process the command starts, runsc's sandbox included, is in that group.
 *
 * A timeout or cancel kills the group, not just the runtime's first process: bwrap forks the PID namespace's init, which
 * mounts the whole view and only then takes its own session and arms --die-with-parent (right
 * before and after it forks the command). SIGKILL to bwrap during that setup, tens of
 * milliseconds on a loaded machine, left the init and then the command running, holding the
 * output pipes, so the call never ended. The outcome is reported once the group is empty.
 */
import { spawn } from 'node:child_process';
import type { ProcessOutcome } from '../protocol.ts';
import type { TenantCgroup } from '../cgroups/tenant-group.ts';
import type { SandboxRuntime } from './runtimes/runtime.ts';

/** `sh -c` script: write 0 (this shell) into each cgroup.procs given before `--`, then exec the rest. */
const ENTER_CGROUP_THEN_EXEC = 'while [ "$1" != -- ]; do echo 0 > "$1" || exit 125; shift; done; shift; exec "$@"';

export interface SandboxContext {
  /** what confines each command (bubblewrap or gVisor), behind one interface */
  runtime: SandboxRuntime;
  cgroup: TenantCgroup;
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

export function startSandboxedProcess(context: SandboxContext, spec: ProcessSpec): RunningProcess {
  const started = performance.now();
  const oomKillsBefore = context.cgroup.oomKills();
  const group = context.cgroup.commandGroup();
  const launch = context.runtime.launch({ argv: spec.argv, cwd: spec.cwd });
  const argv = [...group.entryFiles, '--', ...launch.argv];
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
      launch.release();
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
