/**
 * The gVisor runtime: the tenant's commands run in one gVisor sandbox (gvisor-sandbox.ts), so the
 * guest's system calls are served by gVisor's user-space kernel, not the host's, and that one
 * kernel counts every guest process of the tenant against its limit. Each command is a `runsc
 * exec` into it (oci-spec.ts, commandProcess), in its own PID namespace there: a timeout or cancel
 * kills the command's `unshare` inside the sandbox (`runsc kill --pid`), and with it every process
 * of that namespace and no other command's. The sandbox runs as root in the staging mount namespace
 * (where the workspace and home are bound onto world-searchable directories) and in the tenant's
 * network namespace, whose nftables filter then sees every connection the guest makes
 * (--network=host: the guest's sockets are the host's, in that namespace).
 *
 * Why one sandbox per tenant with `runsc exec` rather than `runsc run` or `runsc do` per command:
 * docs/SANDBOX.md, "The gVisor runtime".
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GUEST_ENVIRONMENT } from '../guest-files.ts';
import type { HostIdentity } from '../guest-identity.ts';
import { runToEnd } from '../run-to-end.ts';
import type { Staging } from '../staging.ts';
import type { Tools } from '../tools.ts';
import { Unavailable } from '../unavailable.ts';
import type { TenantLayout } from './bubblewrap-runtime.ts';
import { GvisorSandbox, safeReaddir } from './gvisor-sandbox.ts';
import { commandProcess, handOverSpec, makeRootfs, sandboxSpec, tenantMounts } from './oci-spec.ts';
import type { SandboxRuntime } from './runtime.ts';

/** `<tmpdir>/agentd-runsc-<runner pid>`: the runner's runsc state, bundles and root; the orphan sweep finds runsc processes by it. */
export const RUNSC_DIRECTORY_PREFIX = 'agentd-runsc-';

/**
 * The tenant cgroup's pids.max under gVisor. The host sees runsc's tasks, not the guest's
 * processes: the threads of gVisor's kernel and file proxy, a few per `runsc exec`, and under
 * ptrace a stub process and a tracer thread per guest thread. The guest's own 512 are counted by
 * the sandbox's one gVisor kernel (RLIMIT_NPROC, oci-spec.ts) across all the tenant's commands;
 * this bound keeps runsc itself from exhausting the host.
 */
export const GVISOR_HOST_TASKS = 16384;

/** gVisor platforms (how the sentry intercepts the guest's system calls); runsc's own default when unset. */
const PLATFORMS = ['ptrace', 'systrap', 'kvm'];

export interface GvisorSetup {
  tools: Tools;
  layout: TenantLayout;
  identity: HostIdentity & { staging: Staging };
  /** pid of the process holding the tenant's network namespace (network.ts) */
  networkHolderPid: number;
  environment: NodeJS.ProcessEnv;
  /** the guest's process limit (SANDBOX_LIMITS.processes) */
  processes: number;
  /** the tenant cgroup's cgroup.procs files, where the sandbox runs */
  tenantEntryFiles: string[];
}

/** How long a cancel waits for `runsc exec` to say which process it started, and for `runsc kill`. */
const STOP_TIMEOUT_MS = 10_000;

export function runscDirectory(runnerPid: number): string {
  return join(tmpdir(), `${RUNSC_DIRECTORY_PREFIX}${runnerPid}`);
}

/** The runsc flags every invocation of this runner shares. */
function globalFlags(state: string, environment: NodeJS.ProcessEnv): string[] {
  const platform = environment.AGENTD_SANDBOX_RUNSC_PLATFORM;
  if (platform && !PLATFORMS.includes(platform)) throw new Unavailable('runsc', `AGENTD_SANDBOX_RUNSC_PLATFORM must be one of ${PLATFORMS.join(', ')}, not ${platform}`);
  // --ignore-cgroups: runsc would otherwise make a cgroup of its own at the hierarchy's root and leave the tenant's limits
  return ['--root', state, '--ignore-cgroups', ...(platform ? [`--platform=${platform}`] : [])];
}

/** Removes the runsc directories of runners that no longer run (a runner killed outright leaves its own). */
function removeRunscDirectoriesOfDeadRunners(): void {
  for (const name of readdirSync(tmpdir())) {
    const pid = name.startsWith(RUNSC_DIRECTORY_PREFIX) ? name.slice(RUNSC_DIRECTORY_PREFIX.length) : '';
    if (/^\d+$/.test(pid) && !existsProcess(Number(pid))) rmSync(join(tmpdir(), name), { recursive: true, force: true });
  }
}

function existsProcess(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The runner must be root: runsc creates its sandbox's namespaces and chroot as root. */
export function checkGvisorHost(): void {
  if (process.geteuid!() !== 0) throw new Unavailable('runsc', 'the gvisor runtime needs a root runner: runsc sets up its sandbox as root (the guest is never root on the host)');
}

export async function startGvisorRuntime(setup: GvisorSetup): Promise<SandboxRuntime> {
  checkGvisorHost();
  removeRunscDirectoriesOfDeadRunners();
  const { tools, layout, identity } = setup;
  const directory = runscDirectory(process.pid);
  const state = join(directory, 'state');
  const rootfs = join(directory, 'rootfs');
  mkdirSync(state, { recursive: true, mode: 0o700 });
  const flags = globalFlags(state, setup.environment);
  const view = { ...layout, workspace: identity.staging.workspace, home: layout.home === null ? null : identity.staging.home };
  const directories = layout.home === null ? [view.workspace] : [view.workspace, view.home!];
  makeRootfs(rootfs, layout.system, [
    ...tenantMounts({ ...view, identity }),
    ...directories.map((source, index) => ({ destination: `/target/${index}`, source, type: 'bind' })),
  ]);
  // runsc as root, in the staging mount namespace (the bind sources) and the tenant's network namespace, killed with the runner
  const enter = [
    tools.setpriv, '--pdeathsig', 'KILL', '--',
    tools.nsenter, `--mount=/proc/${identity.staging.holderPid}/ns/mnt`, `--net=/proc/${setup.networkHolderPid}/ns/net`, '--',
    tools.runsc, ...flags,
  ];
  const handOverBundle = join(directory, 'hand-over');
  mkdirSync(handOverBundle, { mode: 0o700 });
  writeFileSync(join(handOverBundle, 'config.json'), JSON.stringify(handOverSpec(rootfs, layout.system, directories, identity)));
  const handOverId = `agentd-${process.pid}-hand-over`;
  const result = await runToEnd(enter[0], [...enter.slice(1), '--network=none', 'run', '--bundle', handOverBundle, handOverId], { env: { PATH: '/usr/bin:/bin' }, timeoutMs: 120_000 });
  rmSync(handOverBundle, { recursive: true, force: true });
  for (const name of safeReaddir(state)) if (name.includes(handOverId)) rmSync(join(state, name), { recursive: true, force: true });
  if (result.error || result.status !== 0) {
    throw new Unavailable('runsc', `runsc cannot run a container here: ${(result.error?.message ?? result.stderr).trim() || `exit ${result.status}`}`);
  }

  const sandbox = new GvisorSandbox({
    directory,
    state,
    runsc: enter,
    tenantEntryFiles: setup.tenantEntryFiles,
    spec: sandboxSpec({ rootfs, ...view, identity, processes: setup.processes }),
  });
  // `runsc exec` and `runsc kill` run where the sandbox was started: outside its mount namespace runsc takes it for stopped
  const runsc = enter;
  let commands = 0;
  return {
    name: 'gvisor',
    launch: async ({ argv, cwd }) => {
      const id = await sandbox.containerId();
      commands += 1;
      const files = { process: join(directory, `command-${commands}.json`), pid: join(directory, `command-${commands}.pid`) };
      writeFileSync(files.process, JSON.stringify(commandProcess({ argv, cwd, env: GUEST_ENVIRONMENT, identity, processes: setup.processes })));
      return {
        argv: [...runsc, 'exec', '--process', files.process, '--internal-pid-file', files.pid, id],
        stop: async () => {
          const pid = await guestPid(files.pid);
          if (pid !== null) await killNamespace(runsc, id, pid);
        },
        release: (endedNormally) => {
          sandbox.commandEnded(endedNormally);
          rmSync(files.process, { force: true });
          rmSync(files.pid, { force: true });
        },
      };
    },
    close: () => {
      sandbox.close();
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

const RUNSC_ENVIRONMENT = { PATH: '/usr/bin:/bin' };

/**
 * Kills the init of the command's PID namespace, the child of its `unshare` (`runsc exec`'s own
 * process): gVisor's kernel then kills every other process of that namespace, and `unshare` reaps
 * the init and exits, which ends `runsc exec`. (Killing `unshare` itself would leave the namespace:
 * this gVisor delivers no parent-death signal, so `unshare --kill-child` does nothing.) Done once
 * the command has ended.
 */
async function killNamespace(runsc: string[], id: string, leader: number): Promise<void> {
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const listing = await runToEnd(runsc[0], [...runsc.slice(1), 'ps', id], { env: RUNSC_ENVIRONMENT, timeoutMs: STOP_TIMEOUT_MS, stdout: true });
    // UID PID PPID C TTY STIME TIME CMD
    const rows = listing.stdout.split('\n').slice(1).map((line) => line.trim().split(/\s+/).slice(1, 3).map(Number));
    if (listing.status !== 0 || !rows.some(([pid]) => pid === leader)) return;
    const init = rows.find(([, parent]) => parent === leader);
    if (init) {
      await runToEnd(runsc[0], [...runsc.slice(1), 'kill', '--pid', String(init[0]), id, 'KILL'], { env: RUNSC_ENVIRONMENT, timeoutMs: STOP_TIMEOUT_MS });
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50)); // `unshare` has not forked the command yet
  }
}

/**
 * The command's pid in the sandbox, once `runsc exec` has written it: a cancel that comes while
 * runsc is still starting the command waits for it, so the command cannot start after its cancel.
 */
async function guestPid(file: string): Promise<number | null> {
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (existsSync(file)) {
      const pid = Number(readFileSync(file, 'utf8').trim());
      if (pid > 0) return pid;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return null;
}
