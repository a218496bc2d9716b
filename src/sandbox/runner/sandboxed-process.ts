/**
 * Runs one command inside the tenant's sandbox and reports how it ended. The spawned shell moves
 * itself into a cgroup of the command's own (inside the tenant's), then execs the runtime's argv
 * (runtimes/: nsenter and bwrap, or setpriv and `runsc exec`), so the runtime is the runner's
 * direct child and every host process the command starts is in that group. (Under gVisor the
 * guest's processes live in the tenant's sandbox, outside the group: the runtime's stop() ends them.)
 *
 * A timeout or cancel first has the runtime stop the command, then kills the group, not just the runtime's first process: bwrap forks the PID namespace's init, which
 * mounts the whole view and only then takes its own session and arms --die-with-parent (right
 * before and after it forks the command). SIGKILL to bwrap during that setup, tens of
 * milliseconds on a loaded machine, left the init and then the command running, holding the
 * output pipes, so the call never ended. The outcome is reported once the group is empty.
 */
import { spawn } from 'node:child_process';
import type { ProcessOutcome } from '../protocol.ts';
import type { TenantCgroup } from '../cgroups/tenant-group.ts';
import type { CommandLaunch, SandboxRuntime } from './runtimes/runtime.ts';

/** `sh -c` script: write 0 (this shell) into each cgroup.procs given before `--`, then exec the rest. */
export const ENTER_CGROUP_THEN_EXEC = 'while [ "$1" != -- ]; do echo 0 > "$1" || exit 125; shift; done; shift; exec "$@"';

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

/** How a command's host side ended. */
type Ending = Pick<ProcessOutcome, 'exitCode' | 'signal' | 'outputTruncated'>;

export function startSandboxedProcess(context: SandboxContext, spec: ProcessSpec): RunningProcess {
  const started = performance.now();
  const oomKillsBefore = context.cgroup.oomKills();
  let timedOut = false;
  let cancelled = false;
  let kill = () => {}; // until the command runs, a timeout or cancel only keeps it from starting
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, spec.timeoutMs);

  const ending = context.runtime.launch({ argv: spec.argv, cwd: spec.cwd }).then(
    (launch): Promise<Ending> | Ending => (timedOut || cancelled ? { exitCode: null, signal: 'SIGKILL', outputTruncated: false } : run(context, spec, launch, (killer) => (kill = killer))),
    (error: Error): Ending => {
      spec.onOutput('stderr', Buffer.from(`sandbox: cannot start the command: ${error.message}\n`));
      return { exitCode: 125, signal: null, outputTruncated: false };
    },
  );
  const done = ending.then((end) => {
    clearTimeout(timer);
    return { ...end, timedOut, cancelled, oomKilled: context.cgroup.oomKills() > oomKillsBefore, durationMs: Math.round(performance.now() - started) };
  });

  return {
    cancel() {
      cancelled = true;
      kill();
    },
    done,
  };
}

/** Runs the launched command in a cgroup of its own; `onKill` receives what ends it early. */
function run(context: SandboxContext, spec: ProcessSpec, launch: CommandLaunch, onKill: (kill: () => void) => void): Promise<Ending> {
  const group = context.cgroup.commandGroup();
  const argv = [...group.entryFiles, '--', ...launch.argv];
  const child = spawn('/bin/sh', ['-c', ENTER_CGROUP_THEN_EXEC, 'sh', ...argv], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { PATH: '/usr/bin:/bin' },
  });
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

  onKill(() => {
    void launch.stop().finally(() => {
      child.kill('SIGKILL');
      void group.killAll();
    });
  });

  return new Promise<Ending>((resolve) => {
    child.on('error', (error) => {
      spec.onOutput('stderr', Buffer.from(`sandbox: cannot start the command: ${error.message}\n`));
    });
    child.on('close', async (exitCode, signal) => {
      await group.killAll(); // normally empty already: the namespace ends with bwrap
      group.remove();
      launch.release(signal === null && exitCode !== null && exitCode < 126);
      resolve({ exitCode, signal, outputTruncated });
    });
  });
}
