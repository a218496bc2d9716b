/**
 * The bubblewrap runtime: each command runs under bwrap in namespaces of the host kernel, entered
 * as the guest's host user (a root runner's commands drop root in the runner's staging mount
 * namespace first) after joining the tenant's network namespace (docs/SANDBOX.md).
 */
import { bubblewrapArguments, type TenantView } from '../../bubblewrap.ts';
import { GUEST_ENVIRONMENT } from '../guest-files.ts';
import type { HostIdentity } from '../guest-identity.ts';
import type { Staging } from '../staging.ts';
import type { Tools } from '../tools.ts';
import type { SandboxRuntime } from './runtime.ts';

/** What the tenant view shows, fixed when the runner starts. */
export type TenantLayout = Pick<TenantView, 'workspace' | 'home' | 'generatedEtc' | 'system'>;

export interface BubblewrapSetup {
  tools: Tools;
  layout: TenantLayout;
  /** a root runner's guest user and the mount namespace where it reaches the workspace and home (staging.ts); null: the runner's own user */
  identity: (HostIdentity & { staging: Staging }) | null;
  /** argv prefix that joins the tenant's user and network namespace */
  enterNetwork: string[];
}

export function bubblewrapRuntime(setup: BubblewrapSetup): SandboxRuntime {
  const { identity, layout } = setup;
  const view = identity === null ? layout : { ...layout, workspace: identity.staging.workspace, home: layout.home === null ? null : identity.staging.home };
  // A root runner's command enters the staging namespace and leaves root (and every capability) in one step, before it touches the tenant's namespaces.
  const prefix = [...(identity === null ? [] : identity.staging.enterAsGuest(identity)), ...setup.enterNetwork, setup.tools.bwrap];
  return {
    name: 'bubblewrap',
    // everything a command starts is in its cgroup: nothing to stop elsewhere
    launch: async ({ argv, cwd }) => ({
      argv: [...prefix, ...bubblewrapArguments({ view: 'tenant', ...view, command: argv, cwd, env: GUEST_ENVIRONMENT })],
      stop: async () => {},
      release() {},
    }),
    close() {},
  };
}
