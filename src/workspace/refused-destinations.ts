/**
 * The destinations nothing a tenant influences may reach (CONTRACT.md §12 and §17): private,
 * loopback, link-local, carrier-grade-NAT, metadata, documentation, multicast and reserved
 * addresses, IPv4 and IPv6. One list: the sandbox's nftables rules (sandbox/runner/network.ts) are
 * written from it, and repository URLs are checked against it after DNS resolution
 * (repository-destination.ts).
 */
import { BlockList, isIP } from 'node:net';

export const REFUSED_V4 = [
  '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12',
  '192.0.0.0/24', '192.0.2.0/24', '192.168.0.0/16', '198.18.0.0/15', '198.51.100.0/24',
  '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4',
];
// ::/127 is the unspecified and loopback addresses; ::ffff:0:0/96 and the NAT64 prefixes would
// otherwise reach refused IPv4 destinations in IPv6 clothing; fd00:ec2::254 (a metadata service)
// lies in fc00::/7.
export const REFUSED_V6 = ['::/127', '::ffff:0:0/96', '64:ff9b::/96', '64:ff9b:1::/48', '100::/64', '2001:db8::/32', 'fc00::/7', 'fe80::/10', 'fec0::/10', 'ff00::/8'];

// Two lists, each asked only about its own family: node's BlockList matches an IPv4 address
// against IPv6 rules as ::ffff:a.b.c.d, so one list holding ::ffff:0:0/96 would refuse every IPv4.
const refusedV4 = blockList(REFUSED_V4, 'ipv4');
const refusedV6 = blockList(REFUSED_V6, 'ipv6');

/** True when `address` (an IP literal) is a refused destination; anything that is not an address is refused too. */
export function isRefusedAddress(address: string): boolean {
  const bare = bareAddress(address);
  const family = isIP(bare);
  if (family === 4) return refusedV4.check(bare, 'ipv4');
  // Stryker disable next-line StringLiteral: BlockList.check takes an IPv6 address with an empty family as IPv6 (an IPv4 one it does not)
  if (family === 6) return refusedV6.check(bare, 'ipv6');
  return true;
}

/** An IP literal without URL brackets or a zone index: `[fe80::1%eth0]` is fe80::1. */
function bareAddress(address: string): string {
  const unbracketed = address.replace(/^\[(.*)\]$/, '$1');
  return unbracketed.replace(/%.*/, ''); // from the % on (a newline stops the zone, and no address then remains)
}

function blockList(networks: readonly string[], family: 'ipv4' | 'ipv6'): BlockList {
  const list = new BlockList();
  for (const network of networks) {
    const [prefix, length] = network.split('/');
    list.addSubnet(prefix, Number(length), family);
  }
  return list;
}

const loopbackV4 = blockList(['127.0.0.0/8'], 'ipv4');
// ::ffff:7f00:0/104 is 127.0.0.0/8 mapped into IPv6 (the URL parser writes ::ffff:127.0.0.1 so)
const loopbackV6 = blockList(['::1/128', '::ffff:7f00:0/104'], 'ipv6');

/** True when `address` (an IP literal) is a loopback address: 127.0.0.0/8, ::1, or 127.x in IPv6 clothing. */
export function isLoopbackAddress(address: string): boolean {
  const bare = bareAddress(address);
  const family = isIP(bare);
  if (family === 4) return loopbackV4.check(bare, 'ipv4');
  // Stryker disable next-line ConditionalExpression, StringLiteral: `true` asks the IPv6 list about a non-address, which no BlockList holds (false either way), and an empty family is IPv6 to it; the `false` twin, killed, shares the line
  if (family === 6) return loopbackV6.check(bare, 'ipv6');
  return false;
}
