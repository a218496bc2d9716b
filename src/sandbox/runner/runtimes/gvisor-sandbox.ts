/**
 * The tenant's one gVisor sandbox: a long-lived container (`runsc run` of sandboxSpec, oci-spec.ts)
 * whose single gVisor kernel runs every command of the tenant (`runsc exec`), so that kernel counts
 * all the guest's processes against its 512 and the sandbox's memory is all in the tenant's cgroup.
 *
 * `runsc run` is started in the tenant's own cgroup (not a command's: it outlives commands), as
 * root, in the staging mount namespace (the bind sources) and the tenant's network namespace, and
 * is killed with the runner (setpriv --pdeathsig); it keeps gVisor's sandbox and file proxy
 * attached, so they die with it. When it ends for any other reason (runsc crashed, the memory limit
 * killed the sandbox), the commands running in it fail and the next command starts a new one.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runToEnd } from '../run-to-end.ts';
import { ENTER_CGROUP_THEN_EXEC } from '../sandboxed-process.ts';
import { SANDBOX_READY_LINE } from './oci-spec.ts';

/** How long a sandbox may take to boot before it is given up (a loaded 2-core machine takes seconds). */
const START_TIMEOUT_MS = 60_000;
/** How long `runsc state` may take before the sandbox is taken for gone. */
const STATE_TIMEOUT_MS = 30_000;

export interface SandboxOptions {
  /** the runner's runsc directory: bundles live here */
  directory: string;
  /** runsc's --root */
  state: string;
  /** argv that runs runsc (with its global flags) as root in the staging mount and tenant network namespaces, killed with the runner */
  runsc: string[];
  /** the tenant cgroup's cgroup.procs files */
  tenantEntryFiles: string[];
  /** the sandbox's config.json */
  spec: object;
}

interface Running {
  id: string;
  process: ChildProcess;
  /** the pid of gVisor's kernel (`runsc-sandbox`), from runsc's state */
  sandboxPid: number | null;
}

function sandboxAlive(sandbox: Running): boolean {
  if (sandbox.process.exitCode !== null || sandbox.process.signalCode !== null) return false;
  if (sandbox.sandboxPid === null) return true;
  try {
    process.kill(sandbox.sandboxPid, 0);
    return true;
  } catch {
    return false;
  }
}

export class GvisorSandbox {
  private started = 0;
  private running: Promise<Running> | null = null;
  /**
   * Whether every command since the container was last known to run ended by itself. The memory
   * limit stops the container inside a live sandbox by killing what allocates, a command, whose
   * end is then violent; only then is runsc asked (`runsc state` costs a process start, 27 ms at
   * p50 on a quiet machine, on every command otherwise). A container stopped with no command
   * ending violently costs one exec, which runsc fails with status 128: a violent end, so the
   * next command asks and gets a new sandbox.
   */
  private undisturbed = true;

  constructor(private readonly options: SandboxOptions) {}

  /** The id of the running sandbox, started first when there is none (the runner's first command, or the next after a crash). */
  async containerId(): Promise<string> {
    const sandbox = await this.current();
    if (sandboxAlive(sandbox) && (this.undisturbed || (await this.containerRunning(sandbox.id)))) {
      this.undisturbed = true;
      return sandbox.id;
    }
    // killed (say by the memory limit) but `runsc run` has not exited yet: a command exec'd now would find it stopped.
    // The memory limit can kill the container's first process and leave runsc-sandbox alive, so only `runsc state` sees it.
    sandbox.process.kill('SIGKILL');
    if (this.running !== null && (await this.running) === sandbox) this.running = null;
    // a sandbox just started is taken as it is: a runsc whose state always fails must not restart forever
    return (await this.current()).id;
  }

  /** Told by each command as it ends: whether it exited by itself (runtime.ts, CommandLaunch.release). */
  commandEnded(endedNormally: boolean): void {
    if (!endedNormally) this.undisturbed = false;
  }

  private current(): Promise<Running> {
    this.running ??= this.start().catch((error: unknown) => {
      this.running = null;
      throw error;
    });
    return this.running;
  }

  /** Whether runsc still takes the container for running (one `runsc state`, about 0.1–0.3 s under load). */
  private async containerRunning(id: string): Promise<boolean> {
    const { runsc } = this.options;
    const result = await runToEnd(runsc[0], [...runsc.slice(1), 'state', id], { env: { PATH: '/usr/bin:/bin' }, timeoutMs: STATE_TIMEOUT_MS, stdout: true });
    if (result.error || result.status !== 0) return false;
    try {
      return (JSON.parse(result.stdout) as { status?: string }).status === 'running';
    } catch {
      return false;
    }
  }

  /** Ends the sandbox (the runner is stopping; its cgroup is emptied next anyway). */
  close(): void {
    void this.running?.then((sandbox) => sandbox.process.kill('SIGKILL'), () => {});
    this.running = null;
  }

  private start(): Promise<Running> {
    this.started += 1;
    this.undisturbed = true;
    const id = `agentd-${process.pid}-sandbox-${this.started}`;
    const bundle = join(this.options.directory, id);
    mkdirSync(bundle, { mode: 0o700 });
    writeFileSync(join(bundle, 'config.json'), JSON.stringify(this.options.spec));
    const child = spawn('/bin/sh', ['-c', ENTER_CGROUP_THEN_EXEC, 'sh', ...this.options.tenantEntryFiles, '--', ...this.options.runsc, '--network=host', 'run', '--bundle', bundle, id], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { PATH: '/usr/bin:/bin' },
    });
    child.once('exit', () => {
      // a later command must not exec into a sandbox that is gone; it starts the next one
      if (this.running !== null) void this.running.then((sandbox) => sandbox.process === child && (this.running = null), () => {});
      rmSync(bundle, { recursive: true, force: true });
      for (const name of safeReaddir(this.options.state)) if (name.includes(id)) rmSync(join(this.options.state, name), { recursive: true, force: true });
    });
    return new Promise((resolve, reject) => {
      let stdout = '';
      let stderr = '';
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`the gVisor sandbox did not start within ${START_TIMEOUT_MS / 1000} s`));
      }, START_TIMEOUT_MS);
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4096)));
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
        if (!stdout.includes(SANDBOX_READY_LINE)) return;
        clearTimeout(timer);
        child.stdout!.removeAllListeners('data').resume();
        resolve({ id, process: child, sandboxPid: sandboxPidOf(this.options.state, id) });
      });
      child.once('error', (error) => reject(error));
      child.once('exit', (status, signal) => {
        clearTimeout(timer);
        reject(new Error(`runsc cannot start the sandbox: ${stderr.trim() || `exit ${status ?? signal}`}`));
      });
    });
  }
}

/** runsc's state file (`<id>_sandbox:<id>.state`, JSON) names the sandbox's pid; null when this runsc writes it elsewhere. */
function sandboxPidOf(state: string, id: string): number | null {
  for (const name of safeReaddir(state)) {
    if (!name.includes(id) || !name.endsWith('.state')) continue;
    try {
      const pid = (JSON.parse(readFileSync(join(state, name), 'utf8')) as { sandbox?: { pid?: number } }).sandbox?.pid;
      if (typeof pid === 'number' && pid > 0) return pid;
    } catch {
      // being written
    }
  }
  return null;
}

export function safeReaddir(directory: string): string[] {
  try {
    return readdirSync(directory);
  } catch {
    return [];
  }
}
