/**
 * `agentd-sandbox --workspace DIR [--home DIR]`: one tenant's sandbox runner (docs/SANDBOX.md).
 * Its runtime (bubblewrap, or gVisor's runsc) is AGENTD_SANDBOX_RUNTIME's, chosen once by agentd.
 * It first makes sure the host can give every guarantee (the runtime, user and network namespaces,
 * nftables, slirp4netns, the cgroup limits) and proves it by running `true` confined; only then
 * does it print `ready`. Anything missing is one `unavailable` line and exit 1: never a weaker sandbox.
 */
import { chmodSync, existsSync, realpathSync, statSync } from 'node:fs';
import { flushCompileCache } from 'node:module';
import { parseArgs } from 'node:util';
import { detectCgroupLayout } from '../cgroups/layout.ts';
import { LimitError, SANDBOX_LIMITS } from '../cgroups/limits.ts';
import { TenantCgroup } from '../cgroups/tenant-group.ts';
import { encodeLine, GUEST_HOME, GUEST_WORKSPACE, PROTOCOL_VERSION, type SandboxResponse } from '../protocol.ts';
import { inspectSystemEntries } from '../system-paths.ts';
import { writeGuestEtc } from './guest-files.ts';
import { guestHostIdentity, handOver } from './guest-identity.ts';
import { startStaging, type Staging } from './staging.ts';
import { TenantNetwork } from './network.ts';
import { bubblewrapRuntime } from './runtimes/bubblewrap-runtime.ts';
import { checkGvisorHost, GVISOR_HOST_TASKS, startGvisorRuntime } from './runtimes/gvisor-runtime.ts';
import { chosenRuntime, type SandboxRuntime } from './runtimes/runtime.ts';
import { startSandboxedProcess, type SandboxContext } from './sandboxed-process.ts';
import { RunnerSession } from './session.ts';
import { findTools } from './tools.ts';
import { checkBubblewrapPrivileges } from './host-privileges.ts';
import { Unavailable } from './unavailable.ts';

/** How long a stopping runner waits for its cancelled commands to report. */
const STOP_GRACE_MS = 3000;

function send(response: SandboxResponse): void {
  process.stdout.write(encodeLine(response));
}

function directoryOption(value: string | undefined, option: string): string {
  if (!value) throw new Unavailable('workspace', `--${option} DIR is required`);
  if (!existsSync(value) || !statSync(value).isDirectory()) throw new Unavailable('workspace', `--${option} ${value} is not a directory`);
  return realpathSync(value);
}

interface Resources {
  cgroup?: TenantCgroup;
  network?: TenantNetwork;
  staging?: Staging;
  runtime?: SandboxRuntime;
  removeEtc?: () => void;
}

async function prepare(resources: Resources): Promise<SandboxContext> {
  const { values } = parseArgs({ options: { workspace: { type: 'string' }, home: { type: 'string' } }, strict: true });
  const workspace = directoryOption(values.workspace, 'workspace');
  const home = values.home === undefined ? null : directoryOption(values.home, 'home');
  const runtimeName = chosenRuntime(process.env);
  if (runtimeName === 'gvisor') checkGvisorHost();
  const tools = findTools(process.env, runtimeName);
  if (runtimeName === 'bubblewrap') checkBubblewrapPrivileges(tools);
  const identity = guestHostIdentity(workspace, process.env);
  const system = inspectSystemEntries();
  const layout = detectCgroupLayout(process.env.AGENTD_SANDBOX_CGROUP_ROOT || '/sys/fs/cgroup');
  if (!layout.ok) throw new Unavailable(layout.missing, layout.message);
  const hostLimits = runtimeName === 'gvisor' ? { ...SANDBOX_LIMITS, processes: GVISOR_HOST_TASKS } : SANDBOX_LIMITS;
  resources.cgroup = TenantCgroup.create(layout.layout, `agentd-sandbox-${process.pid}`, hostLimits);
  const etc = writeGuestEtc(GUEST_HOME, runtimeName === 'gvisor' && identity !== null ? identity : undefined);
  resources.removeEtc = etc.remove;
  chmodSync(etc.directory, 0o755); // read by bwrap as the guest's host user
  // Independent steps, each a few helper processes, side by side; no guest command runs before all are done.
  const steps: Promise<void>[] = [TenantNetwork.start(tools, identity).then((network) => void (resources.network = network))];
  if (identity !== null) {
    // after the groups of dead runners were emptied: no guest of this tenant runs while the hand-over walks its files
    if (runtimeName === 'bubblewrap') steps.push(handOver(tools.bwrap, system, home === null ? [workspace] : [workspace, home], identity));
    steps.push(startStaging(tools, etc.directory, { workspace, home }).then((staging) => void (resources.staging = staging)));
  }
  const failed = (await Promise.allSettled(steps)).find((step) => step.status === 'rejected');
  if (failed) throw failed.reason; // release() ends the steps that did start
  const tenantLayout = { workspace, home, generatedEtc: resources.staging?.etc ?? etc.directory, system };
  const staged = identity === null ? null : { ...identity, staging: resources.staging! };
  resources.runtime = runtimeName === 'gvisor'
    ? await startGvisorRuntime({ tools, layout: { ...tenantLayout, generatedEtc: etc.directory }, identity: staged!, networkHolderPid: resources.network!.holderPid, environment: process.env, processes: SANDBOX_LIMITS.processes, tenantEntryFiles: resources.cgroup.entryFiles })
    : bubblewrapRuntime({ tools, layout: tenantLayout, identity: staged, enterNetwork: resources.network!.enterPrefix(tools) });
  const context: SandboxContext = { runtime: resources.runtime, cgroup: resources.cgroup };
  await proveConfinement(context);
  return context;
}

/** Runs `true` the way every command will run; bwrap's own complaint says what the host refuses. */
async function proveConfinement(context: SandboxContext): Promise<void> {
  let stderr = '';
  const probe = startSandboxedProcess(context, {
    argv: ['true'],
    cwd: GUEST_WORKSPACE,
    timeoutMs: 10_000,
    outputLimitBytes: 4096,
    onOutput: (_stream, chunk) => (stderr += chunk.toString('utf8')),
  });
  const outcome = await probe.done;
  if (outcome.exitCode === 0) return;
  const runtime = context.runtime.name === 'gvisor' ? ['runsc', 'runsc'] : ['bwrap', 'bubblewrap'];
  throw new Unavailable(runtime[0], `${runtime[1]} cannot confine a command here: ${stderr.trim() || `exit ${outcome.exitCode}`}`);
}

async function release(resources: Resources): Promise<void> {
  await resources.cgroup?.killAll();
  resources.network?.close();
  resources.staging?.close();
  resources.runtime?.close();
  resources.cgroup?.remove();
  resources.removeEtc?.();
}

async function main(): Promise<void> {
  const resources: Resources = {};
  let context: SandboxContext;
  try {
    context = await prepare(resources);
  } catch (error) {
    const missing = error instanceof Unavailable || error instanceof LimitError ? error.missing : 'runner';
    send({ type: 'unavailable', missing, message: (error as Error).message });
    await release(resources);
    process.exit(1);
  }
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    session.cancelAll();
    // The cancelled calls' results go out before the runner does, so the caller reads an outcome
    // instead of a death; a command that will not die is left to release() and the cgroup.
    await Promise.race([session.idle, new Promise((resolve) => setTimeout(resolve, STOP_GRACE_MS))]);
    await release(resources);
    process.exit(0);
  };
  const session = new RunnerSession(context, send, () => void stop());
  send({
    type: 'ready',
    protocol: PROTOCOL_VERSION,
    workspace: GUEST_WORKSPACE,
    limits: { ...SANDBOX_LIMITS },
    cgroupVersion: context.cgroup.version,
    runtime: context.runtime.name,
  });
  setImmediate(flushCompileCache); // bin/compile-cache.js, kept even if this runner is killed
  process.stdin.on('data', (chunk: Buffer) => session.push(chunk));
  process.stdin.on('end', () => void stop());
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
  process.stdout.on('error', () => void stop()); // the caller went away
}

await main();
