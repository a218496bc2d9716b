/**
 * The tenant's network: one network namespace per runner, held open by a tiny process in a fresh
 * user namespace, with nftables rules that refuse private, loopback, link-local, CGNAT and
 * metadata destinations (IPv4 and IPv6) and drop every inbound connection, and slirp4netns as its
 * only way out (user-mode NAT through the host's sockets, host loopback disabled, no port
 * forwarding). Every command joins this namespace; its own user namespace is a child of the
 * holder's, so it has no capability over the namespace and cannot change the rules.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { HostIdentity } from './guest-identity.ts';
import { runToEnd } from './run-to-end.ts';
import type { Tools } from './tools.ts';
import { Unavailable } from './unavailable.ts';
import { REFUSED_V4, REFUSED_V6 } from '../../workspace/refused-destinations.ts';

/** slirp4netns's built-in DNS forwarder, the one private address the sandbox may reach (port 53 only). */
const SLIRP_DNS = '10.0.2.3';

export const NFT_TABLE = 'agentd_sandbox';

export function filterRules(): string {
  return `table inet ${NFT_TABLE} {
  counter refused {}
  counter allowed {}
  set refused_v4 { type ipv4_addr; flags interval; elements = { ${REFUSED_V4.join(', ')} } }
  set refused_v6 { type ipv6_addr; flags interval; elements = { ${REFUSED_V6.join(', ')} } }
  chain output {
    type filter hook output priority 0; policy accept;
    ip daddr ${SLIRP_DNS} meta l4proto { tcp, udp } th dport 53 accept
    # the kernel's own link-local control traffic (neighbour discovery, MLD, IGMP) is no connection
    ip6 daddr ff02::/16 meta l4proto ipv6-icmp accept
    ip daddr 224.0.0.0/24 meta l4proto igmp accept
    ip daddr @refused_v4 counter name refused drop
    ip6 daddr @refused_v6 counter name refused drop
    ct state new counter name allowed
  }
  chain input {
    type filter hook input priority 0; policy drop;
    ct state established,related accept
  }
}
`;
}

export class TenantNetwork {
  private constructor(
    private readonly holder: ChildProcess,
    private readonly slirp: ChildProcess,
  ) {}

  get holderPid(): number {
    return this.holder.pid!;
  }

  /** The argv prefix that runs a program inside the tenant's user and network namespace. */
  enterPrefix(tools: Tools): string[] {
    return [tools.nsenter, '-t', String(this.holderPid), '--user', '--net', '--preserve-credentials'];
  }

  /** `identity`: the guest's host user, who then owns the namespaces (a root runner's never own them as root). */
  static async start(tools: Tools, identity: HostIdentity | null): Promise<TenantNetwork> {
    const asGuest = identity ?? {};
    const holder = await startHolder(tools, asGuest);
    try {
      const enter = [tools.nsenter, '-t', String(holder.pid), '--user', '--net', '--preserve-credentials'];
      const rules = await runToEnd(enter[0], [...enter.slice(1), tools.nft, '-f', '-'], { input: filterRules(), env: process.env, timeoutMs: 10_000, ...asGuest });
      if (rules.error || rules.status !== 0) {
        throw new Unavailable('nftables', `cannot install the sandbox's network filter with ${tools.nft}: ${(rules.error?.message ?? rules.stderr).trim()}`);
      }
      const slirp = await startSlirp(tools, holder.pid!);
      return new TenantNetwork(holder, slirp);
    } catch (error) {
      holder.kill('SIGKILL');
      throw error;
    }
  }

  close(): void {
    this.slirp.kill('SIGKILL');
    this.holder.kill('SIGKILL');
  }
}

/** `unshare` execs a shell that says it is in place and then waits for its stdin (ours) to close. */
async function startHolder(tools: Tools, asGuest: Partial<HostIdentity>): Promise<ChildProcess> {
  const holder = spawn(tools.unshare, ['--user', '--map-root-user', '--net', '--', '/bin/sh', '-c', 'echo in-place; read _'], { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin' }, ...asGuest });
  let stderr = '';
  holder.stderr!.on('data', (chunk) => (stderr += chunk));
  const exited = once(holder, 'exit').then(() => null);
  const inPlace = once(holder.stdout!, 'data').then(() => true);
  const spawnFailed = once(holder, 'error').then(([error]) => (error as Error).message);
  const outcome = await Promise.race([inPlace, exited, spawnFailed]);
  if (outcome === true) return holder;
  const reason = typeof outcome === 'string' ? outcome : stderr.trim();
  const userOnly = spawnSync(tools.unshare, ['--user', '--map-root-user', '--', '/bin/true'], { encoding: 'utf8', ...asGuest });
  if (userOnly.status !== 0) throw new Unavailable('user_namespaces', `cannot create a user namespace: ${reason}`);
  throw new Unavailable('network_namespaces', `cannot create a network namespace: ${reason}`);
}

/** slirp4netns writes to --ready-fd once tap0 is configured and exits when --exit-fd closes (our death included). */
/**
 * slirp4netns runs as the runner's user: it must open /dev/net/tun, which hosts often keep root's
 * alone. It parses the guest's packets, so it confines itself once its tap device is up
 * (--enable-sandbox: its own mount namespace and no capability beyond binding low ports).
 */
async function startSlirp(tools: Tools, holderPid: number): Promise<ChildProcess> {
  const slirp = spawn(
    tools.slirp4netns,
    ['--configure', '--mtu=65520', '--disable-host-loopback', '--enable-sandbox', '--ready-fd=3', '--exit-fd=4', String(holderPid), 'tap0'],
    { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin' } },
  );
  let stderr = '';
  slirp.stderr!.on('data', (chunk) => (stderr += chunk));
  const ready = once(slirp.stdio[3]!, 'data').then(() => true);
  const exited = once(slirp, 'exit').then(() => false);
  const failed = once(slirp, 'error').then(() => false);
  const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 10_000).unref());
  if (await Promise.race([ready, exited, failed, timeout])) return slirp;
  slirp.kill('SIGKILL');
  throw new Unavailable('slirp4netns', `slirp4netns (${tools.slirp4netns}) did not configure the sandbox's network: ${stderr.trim() || 'it exited or is missing'}`);
}
