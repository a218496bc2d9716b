/**
 * The host programs the runner drives. Each can be pointed elsewhere through the environment
 * (a packaging choice, and how the tests make one of them deliberately unavailable).
 */
import { accessSync, constants } from 'node:fs';
import { Unavailable } from './unavailable.ts';

export interface Tools {
  bwrap: string;
  nft: string;
  slirp4netns: string;
  unshare: string;
  nsenter: string;
  /** drops a root runner's commands to the guest's unprivileged host user */
  setpriv: string;
}

const DEFAULTS: Tools = {
  bwrap: '/usr/bin/bwrap',
  nft: '/usr/sbin/nft',
  slirp4netns: '/usr/bin/slirp4netns',
  unshare: '/usr/bin/unshare',
  nsenter: '/usr/bin/nsenter',
  setpriv: '/usr/bin/setpriv',
};

const OVERRIDES: Record<keyof Tools, string> = {
  bwrap: 'AGENTD_SANDBOX_BWRAP',
  nft: 'AGENTD_SANDBOX_NFT',
  slirp4netns: 'AGENTD_SANDBOX_SLIRP4NETNS',
  unshare: 'AGENTD_SANDBOX_UNSHARE',
  nsenter: 'AGENTD_SANDBOX_NSENTER',
  setpriv: 'AGENTD_SANDBOX_SETPRIV',
};

/** What each program guarantees, as the refusal names it. */
const GUARANTEE: Record<keyof Tools, string> = {
  bwrap: 'bwrap',
  nft: 'nftables',
  slirp4netns: 'slirp4netns',
  unshare: 'user_namespaces',
  nsenter: 'network_namespaces',
  setpriv: 'user_namespaces',
};

const DEBIAN_PACKAGE: Record<keyof Tools, string> = {
  bwrap: 'bubblewrap',
  nft: 'nftables',
  slirp4netns: 'slirp4netns',
  unshare: 'util-linux',
  nsenter: 'util-linux',
  setpriv: 'util-linux',
};

export function findTools(environment: NodeJS.ProcessEnv): Tools {
  const tools = { ...DEFAULTS };
  for (const name of Object.keys(DEFAULTS) as (keyof Tools)[]) {
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
