/**
 * A sandbox runtime: what confines one command of the tenant. The runner's protocol, its cgroups,
 * its network namespace and its file operations are the same for every runtime; a runtime only
 * turns "this argv, in this guest cwd" into the host argv that runs it confined, ends what that
 * command left running where the command's cgroup does not reach, and says at start whether this
 * host can run it (docs/SANDBOX.md, "Runtimes").
 *
 *   bubblewrap  namespaces of the host kernel: every guest system call reaches the host kernel
 *   gvisor      gVisor's runsc: the guest's system calls are served by a user-space kernel, one
 *               per tenant, which every command joins
 *
 * The runner picks one at start (AGENTD_SANDBOX_RUNTIME, set by `agentd serve --sandbox-runtime`).
 */
import { SANDBOX_RUNTIMES, type SandboxRuntimeName } from '../../../config/sandbox-runtimes.ts';
import { Unavailable } from '../unavailable.ts';

export type { SandboxRuntimeName };

/** One command, as the runtime starts it: the argv the runner execs inside the command's cgroup. */
export interface CommandLaunch {
  argv: string[];
  /** kills what the command runs outside its cgroup (under gVisor: inside the tenant's sandbox); the cgroup is killed after */
  stop(): Promise<void>;
  /**
   * Called once the command has ended and its cgroup is empty (a runtime's per-command files).
   * `endedNormally`: it exited by itself with a status under 126 (no signal, no runtime failure).
   */
  release(endedNormally: boolean): void;
}

export interface SandboxRuntime {
  readonly name: SandboxRuntimeName;
  /** rejects when the runtime cannot run a command now (gVisor: its sandbox will not start) */
  launch(command: { argv: readonly string[]; cwd: string }): Promise<CommandLaunch>;
  /** ends what the runtime keeps for the runner's lifetime */
  close(): void;
}

export function chosenRuntime(environment: NodeJS.ProcessEnv): SandboxRuntimeName {
  const value = environment.AGENTD_SANDBOX_RUNTIME || 'bubblewrap';
  if (!(SANDBOX_RUNTIMES as readonly string[]).includes(value)) {
    throw new Unavailable('runtime', `AGENTD_SANDBOX_RUNTIME must be one of ${SANDBOX_RUNTIMES.join(', ')}, not ${value}`);
  }
  return value as SandboxRuntimeName;
}
