/**
 * The host programs the runner drives. Each can be pointed elsewhere through the environment
 * (a packaging choice, and how the tests make one of them deliberately unavailable).
 */
import { accessSync, constants } from 'node:fs';
import type { SandboxRuntimeName } from './runtimes/runtime.ts';
import { Unavailable } from './unavailable.ts';

export interface Tools {
  bwrap: string;
  nft: string;
  slirp4netns: string;
  unshare: string;
  nsenter: string;
  /** drops a root runner's commands to the guest's unprivileged host user; ties runsc to the runner's life */
  setpriv: string;
  /** gVisor's runtime (the gvisor runtime only) */
  runsc: string;
}

const DEFAULTS: Tools = {
  bwrap: '/usr/bin/bwrap',
  nft: '/usr/sbin/nft',
  slirp4netns: '/usr/bin/slirp4netns',
  unshare: '/usr/bin/unshare',
  nsenter: '/usr/bin/nsenter',
  setpriv: '/usr/bin/setpriv',
  runsc: '/usr/bin/runsc',
};

const OVERRIDES: Record<keyof Tools, string> = {
  bwrap: 'AGENTD_SANDBOX_BWRAP',
  nft: 'AGENTD_SANDBOX_NFT',
  slirp4netns: 'AGENTD_SANDBOX_SLIRP4NETNS',
  unshare: 'AGENTD_SANDBOX_UNSHARE',
  nsenter: 'AGENTD_SANDBOX_NSENTER',
  setpriv: 'AGENTD_SANDBOX_SETPRIV',
  runsc: 'AGENTD_SANDBOX_RUNSC',
};

/** What each program guarantees, as the refusal names it. */
const GUARANTEE: Record<keyof Tools, string> = {
  bwrap: 'bwrap',
  nft: 'nftables',
  slirp4netns: 'slirp4netns',
  unshare: 'user_namespaces',
  nsenter: 'network_namespaces',
  setpriv: 'user_namespaces',
  runsc: 'runsc',
};

const DEBIAN_PACKAGE: Record<keyof Tools, string> = {
  bwrap: 'bubblewrap',
  nft: 'nftables',
  slirp4netns: 'slirp4netns',
  unshare: 'util-linux',
  nsenter: 'util-linux',
  setpriv: 'util-linux',
  runsc: 'runsc',
};

/** The programs of the runtime's own (bwrap or runsc) and the ones both share; the other runtime's stays at its default, unchecked. */
export function findTools(environment: NodeJS.ProcessEnv, runtime: SandboxRuntimeName = 'bubblewrap'): Tools {
  const tools = { ...DEFAULTS };
  const unused: keyof Tools = runtime === 'gvisor' ? 'bwrap' : 'runsc';
  for (const name of (Object.keys(DEFAULTS) as (keyof Tools)[]).filter((name) => name !== unused)) {
    const path = environment[OVERRIDES[name]] || DEFAULTS[name];
    try {
      accessSync(path, constants.X_OK);
    } catch {
      throw new Unavailable(GUARANTEE[name], `${name} is not an executable at ${path}; install it (Debian package ${DEBIAN_PACKAGE[name]})`);
    }
    tools[name] = path;
  }
  return tools;
}
