/**
 * Where a network clone may connect (CONTRACT.md §17): the host of a repository URL is resolved
 * once, every address it resolves to is judged by the sandbox's own list of refused destinations
 * (refused-destinations.ts), and git is pinned to the address judged, so that a second lookup (DNS
 * rebinding) cannot lead it elsewhere: http(s) through curl's resolve list (`http.curloptResolve`;
 * redirects are off for every git command, git-command.ts); git:// and ssh by connecting to the
 * address itself (ssh keeps the host's name for its known-hosts check). In a sandbox the tenant's
 * network filter refuses the same destinations again, packet by packet.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isRefusedAddress } from './refused-destinations.ts';
import { SCP_LIKE } from './repository-source.ts';

/** How git reaches a network repository: the address to give it and what pins the connection. */
export interface PinnedDestination {
  /** the URL git is given (the host replaced by the checked address for git:// and ssh) */
  url: string;
  /** `-c name=value` settings for every git command that may connect */
  config: string[];
  /** ssh only: options that keep the host's name for known hosts */
  sshOptions: string[];
}

export type Resolver = (host: string) => Promise<string[]>;

const systemResolver: Resolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

const DEFAULT_PORTS: Record<string, number> = { https: 443, http: 80, git: 9418, ssh: 22 };

/** A destination that may not be reached; the message is meant for the client. */
export class DestinationRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DestinationRefused';
  }
}

/**
 * Resolves and checks the host of `url` (a network form accepted by checkout.ts) and returns how
 * git is to reach it. Refuses when any address is refused, so a name that resolves to a public and
 * a private address cannot be steered to the private one.
 */
export async function pinDestination(url: string, resolve: Resolver = systemResolver): Promise<PinnedDestination> {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url)?.[1]?.toLowerCase();
  if (scheme === undefined) return pinScpLike(url, resolve);
  const parsed = new URL(url);
  // Only the form that was judged (repository-source.ts normalised it) is handed to git.
  if (parsed.href !== url) throw new DestinationRefused('the repository URL is not in the form it was judged in');
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1');
  const address = await checkedAddress(host, resolve);
  const port = parsed.port === '' ? DEFAULT_PORTS[scheme] : Number(parsed.port);
  if (scheme === 'http' || scheme === 'https') {
    const resolveEntry = `${isIP(host) === 6 ? `[${host}]` : host}:${port}:${bracketed(address)}`;
    return { url, config: [`http.curloptResolve=${resolveEntry}`], sshOptions: [] };
  }
  parsed.hostname = bracketed(address);
  return { url: parsed.href, config: [], sshOptions: scheme === 'ssh' ? ['-o', `HostKeyAlias=${host}`] : [] };
}

async function pinScpLike(url: string, resolve: Resolver): Promise<PinnedDestination> {
  const match = SCP_LIKE.exec(url);
  if (!match) throw new DestinationRefused('the repository address is not one git can reach over the network');
  const [, user, rawHost, remotePath] = match;
  const host = rawHost.replace(/^\[(.*)\]$/, '$1');
  const address = await checkedAddress(host, resolve);
  return { url: `${user ? `${user}@` : ''}${bracketed(address)}:${remotePath}`, config: [], sshOptions: ['-o', `HostKeyAlias=${host}`] };
}

async function checkedAddress(host: string, resolve: Resolver): Promise<string> {
  let addresses: string[];
  if (isIP(host) !== 0) addresses = [host];
  else {
    try {
      addresses = await resolve(host);
    } catch (error) {
      throw new DestinationRefused(`the repository host ${host} could not be resolved: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
    }
  }
  if (addresses.length === 0) throw new DestinationRefused(`the repository host ${host} has no address`);
  const refused = addresses.find(isRefusedAddress);
  if (refused !== undefined) {
    throw new DestinationRefused(`the repository host ${host} is ${refused === host ? 'a' : `at ${refused}, a`} loopback, private, link-local or otherwise refused address; the sandbox may not reach it`);
  }
  return addresses[0];
}

function bracketed(address: string): string {
  return isIP(address) === 6 ? `[${address}]` : address;
}
