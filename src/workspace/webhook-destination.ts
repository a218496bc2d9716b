/**
 * Where a webhook may be delivered (CONTRACT.md §20 and §17): never to a loopback, private,
 * link-local, carrier-grade-NAT, metadata or otherwise refused address (refused-destinations.ts),
 * except loopback when the operator allows it (--allow-loopback-webhooks). The name is judged at
 * start-up and again at every connection, on the addresses the connection will use, so a name
 * that resolves elsewhere later (DNS rebinding) is refused then.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import type { LookupFunction } from 'node:net';
import { isLoopbackAddress, isRefusedAddress } from './refused-destinations.ts';

export type WebhookResolver = (host: string) => Promise<string[]>;

const systemWebhookResolver: WebhookResolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

/**
 * What a receiver may be: `allowLoopback` with --allow-loopback-webhooks; `loopbackOnly` for a
 * plain http: URL, whose payloads and signatures may not cross a network in the clear.
 */
export interface WebhookReach {
  allowLoopback: boolean;
  loopbackOnly: boolean;
}

/** The reach of a URL's deliveries. */
export function reachOf(url: URL, allowLoopback: boolean): WebhookReach {
  return { allowLoopback, loopbackOnly: url.protocol === 'http:' };
}

/** Why this address may not receive webhooks, or null when it may. */
export function webhookAddressProblem(address: string, { allowLoopback, loopbackOnly }: WebhookReach): string | null {
  if (allowLoopback && isLoopbackAddress(address)) return null;
  if (loopbackOnly) return `${address} is not a loopback address, and http: is only for a loopback receiver (use https:)`;
  if (!isRefusedAddress(address)) return null;
  return isLoopbackAddress(address)
    ? `${address} is a loopback address (pass --allow-loopback-webhooks to allow it)`
    : `${address} is a private, link-local, metadata or otherwise refused address`;
}

/** The bare host of a URL: brackets of an IPv6 literal removed. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * Why the URL's host may not receive webhooks, judged on every address it resolves to now (one
 * refused address refuses the name: the connection could be steered to it); null when it may, and
 * when the name does not resolve now (each delivery resolves and judges again).
 */
export async function webhookHostProblem(url: URL, reach: WebhookReach, resolve: WebhookResolver = systemWebhookResolver): Promise<string | null> {
  const host = hostOf(url);
  if (isIP(host) !== 0) return webhookAddressProblem(host, reach);
  let addresses: string[];
  try {
    addresses = await resolve(host);
  } catch {
    return null;
  }
  for (const address of addresses) {
    const problem = webhookAddressProblem(address, reach);
    if (problem) return `${host} resolves to ${problem}`;
  }
  return null;
}

/** A refused destination at connect time; the delivery fails and is retried like any other failure. */
export class WebhookDestinationRefused extends Error {
  readonly code = 'EWEBHOOKREFUSED';
  constructor(message: string) {
    super(message);
    this.name = 'WebhookDestinationRefused';
  }
}

/**
 * A `lookup` for node:http's connections: resolves the name, refuses it when any address is refused,
 * and hands the socket the address just judged, so the connection goes where the check looked.
 * (An IP literal never reaches a lookup; the sender judges it itself.)
 */
export function checkedLookup(reach: WebhookReach, resolve: WebhookResolver = systemWebhookResolver): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname).then(
      (addresses) => {
        if (addresses.length === 0) throw new WebhookDestinationRefused(`${hostname} has no address`);
        for (const address of addresses) {
          const problem = webhookAddressProblem(address, reach);
          if (problem) throw new WebhookDestinationRefused(`${hostname} resolves to ${problem}`);
        }
        const address = addresses[0];
        const family = isIP(address);
        if (options.all) (callback as (error: null, addresses: { address: string; family: number }[]) => void)(null, [{ address, family }]);
        else callback(null, address, family);
      },
    ).catch((error: NodeJS.ErrnoException) => callback(error, '', 0));
  };
}
