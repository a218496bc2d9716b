/**
 * The gVisor runtime: each command is one OCI container run by `runsc run` (oci-spec.ts), so the
 * guest's system calls are served by gVisor's user-space kernel, not the host's. runsc starts as
 * root inside the command's cgroup (its sandbox, file proxy and the guest's memory are all charged
 * to the tenant's limits there), in the runner's staging mount namespace (where the workspace and
 * home are bound onto world-searchable directories) and in the tenant's network namespace, whose
 * nftables filter then sees every connection the guest makes (--network=host: the guest's sockets
 * are the host's, in that namespace). It is killed with the runner (setpriv --pdeathsig), and
 * runsc's own sandbox and file proxy die with it (runsc run keeps them attached).
 *
 * Why one `runsc run` per command rather than `runsc do` or one long-lived container with
 * `runsc exec`: docs/SANDBOX.md, "The gVisor runtime".
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GUEST_ENVIRONMENT } from '../guest-files.ts';
import type { HostIdentity } from '../guest-identity.ts';
import { runToEnd } from '../run-to-end.ts';
import type { Staging } from '../staging.ts';
import type { Tools } from '../tools.ts';
import { Unavailable } from '../unavailable.ts';
import type { TenantLayout } from './bubblewrap-runtime.ts';
import { handOverSpec, makeRootfs, tenantMounts, tenantSpec } from './oci-spec.ts';
import type { SandboxRuntime } from './runtime.ts';

/** `<tmpdir>/agentd-runsc-<runner pid>`: the runner's runsc state, bundles and root; the orphan sweep finds runsc processes by it. */
export const RUNSC_DIRECTORY_PREFIX = 'agentd-runsc-';

/**
 * The tenant cgroup's pids.max under gVisor. The host sees runsc's tasks, not the guest's
 * processes: about 150 threads of gVisor's kernel and file proxy per running command, and under
 * ptrace a tracer thread and a stub per guest thread. The guest's own 512 are counted by gVisor's
 * kernel (RLIMIT_NPROC, oci-spec.ts); this bound keeps runsc itself from exhausting the host.
 */
export const GVISOR_HOST_TASKS = 4096;

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
}

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
  let commands = 0;
  const bundle = (spec: object) => {
    commands += 1;
    const id = `agentd-${process.pid}-${commands}`;
    const path = join(directory, `bundle-${commands}`);
    mkdirSync(path, { mode: 0o700 });
    writeFileSync(join(path, 'config.json'), JSON.stringify(spec));
    return { id, path };
  };
  const release = (container: { id: string; path: string }) => {
    rmSync(container.path, { recursive: true, force: true });
    for (const name of safeReaddir(state)) if (name.includes(container.id)) rmSync(join(state, name), { recursive: true, force: true });
  };

  const handOver = bundle(handOverSpec(rootfs, layout.system, directories, identity));
  const result = await runToEnd(enter[0], [...enter.slice(1), '--network=none', 'run', '--bundle', handOver.path, handOver.id], { env: { PATH: '/usr/bin:/bin' }, timeoutMs: 120_000 });
  release(handOver);
  if (result.error || result.status !== 0) {
    throw new Unavailable('runsc', `runsc cannot run a container here: ${(result.error?.message ?? result.stderr).trim() || `exit ${result.status}`}`);
  }

  return {
    name: 'gvisor',
    launch: ({ argv, cwd }) => {
      const container = bundle(tenantSpec({ rootfs, command: argv, cwd, env: GUEST_ENVIRONMENT, ...view, identity, processes: setup.processes }));
      return { argv: [...enter, '--network=host', 'run', '--bundle', container.path, container.id], release: () => release(container) };
    },
    close: () => rmSync(directory, { recursive: true, force: true }),
  };
}

function safeReaddir(directory: string): string[] {
  try {
    return readdirSync(directory);
  } catch {
    return [];
  }
}
