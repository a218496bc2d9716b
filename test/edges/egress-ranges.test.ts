// Near misses of the sandbox's egress filter (runner/network.ts, docs/SANDBOX.md "Network"). The
// rules are loaded into a network namespace this test creates, and the kernel itself answers which
// addresses the refused sets hold: every range's first and last address, and the addresses one
// before and one past it, IPv4, IPv6 and v4-mapped. Then, since the runner's namespace has no IPv6
// route, a second namespace is given one, with a listener the test starts, to watch a real IPv6
// connection be dropped by the filter rather than fail for want of a route.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { filterRules, NFT_TABLE } from '../../src/sandbox/runner/network.ts';
import { isLoopbackAddress, isRefusedAddress } from '../../src/workspace/refused-destinations.ts';

// What docs/SANDBOX.md promises, written out independently of the rule text under test.
const PROMISED_V4 = [
  '0.0.0.0/8', '10.0.0.0/8', '100.64.0.0/10', '127.0.0.0/8', '169.254.0.0/16', '172.16.0.0/12', '192.0.0.0/24',
  '192.0.2.0/24', '192.168.0.0/16', '198.18.0.0/15', '198.51.100.0/24', '203.0.113.0/24', '224.0.0.0/4', '240.0.0.0/4',
];
const PROMISED_V6 = ['::/127', '::ffff:0:0/96', '64:ff9b::/96', '64:ff9b:1::/48', '100::/64', '2001:db8::/32', 'fc00::/7', 'fe80::/10', 'fec0::/10', 'ff00::/8'];

interface Range {
  first: bigint;
  last: bigint;
}

const V4_BITS = 32;
const V6_BITS = 128;

function parseV4(text: string): bigint {
  return text.split('.').reduce((value, part) => (value << 8n) | BigInt(Number(part)), 0n);
}

function formatV4(value: bigint): string {
  return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 255n)).join('.');
}

function parseV6(text: string): bigint {
  const [head, tail = ''] = text.includes('::') ? text.split('::') : [text, undefined];
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  const left = groups(head);
  const right = groups(tail);
  const missing = 8 - left.length - right.length;
  const all = text.includes('::') ? [...left, ...Array(missing).fill('0'), ...right] : left;
  return all.reduce((value, group) => (value << 16n) | BigInt(parseInt(group, 16)), 0n);
}

function formatV6(value: bigint): string {
  const groups: string[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(((value >> shift) & 0xffffn).toString(16));
  return groups.join(':');
}

function rangeOf(cidr: string, bits: number, parse: (text: string) => bigint): Range {
  const [address, prefix] = cidr.split('/');
  const hostBits = BigInt(bits - Number(prefix));
  const first = parse(address);
  return { first, last: first + (1n << hostBits) - 1n };
}

const v4Ranges = PROMISED_V4.map((cidr) => rangeOf(cidr, V4_BITS, parseV4));
const v6Ranges = PROMISED_V6.map((cidr) => rangeOf(cidr, V6_BITS, parseV6));
const promised = (ranges: Range[], value: bigint) => ranges.some((range) => value >= range.first && value <= range.last);

/** Every range's first, last, one-before and one-past address (those that exist). */
function edgesOf(ranges: Range[], bits: number): bigint[] {
  const top = (1n << BigInt(bits)) - 1n;
  return ranges.flatMap((range) => [range.first - 1n, range.first, range.last, range.last + 1n]).filter((value) => value >= 0n && value <= top);
}

/** Runs a shell script as root of a fresh user and network namespace. */
function inFreshNamespace(script: string, input = ''): { stdout: string; stderr: string } {
  const result = spawnSync('unshare', ['--user', '--map-root-user', '--net', '--', 'sh', '-c', script], { input, encoding: 'utf8', timeout: 60_000 });
  assert.equal(result.status, 0, `the namespace script failed: ${result.stderr}`);
  return { stdout: result.stdout, stderr: result.stderr };
}

function rulesFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'agentd-edges-nft-')), 'rules.nft');
  writeFileSync(file, filterRules());
  return file;
}

/**
 * Asks the kernel, for each address, whether the named set holds it: one `nft -i` reads a
 * `get element` per line, printing the matching interval or, on stderr, an error that repeats the
 * query. Returns a map address → held.
 */
function membership(set: 'refused_v4' | 'refused_v6', addresses: string[]): Map<string, boolean> {
  const unique = [...new Set(addresses)];
  const queries = unique.map((address) => `get element inet ${NFT_TABLE} ${set} { ${address} }\n`).join('');
  const { stdout, stderr } = inFreshNamespace(`nft -f ${rulesFile()} && nft -i`, queries);
  const free = new Set([...stderr.matchAll(/^get element .* \{ (\S+) \}$/gm)].map((match) => match[1]));
  const heldAnswers = stdout.match(/^table inet /gm)?.length ?? 0;
  assert.equal(heldAnswers + free.size, unique.length, `the kernel answered for every address: ${stderr.slice(0, 500)}`);
  return new Map(unique.map((address) => [address, !free.has(address)]));
}

describe('the egress filter at the edges of its ranges', () => {
  it('refuses every IPv4 range from its first to its last address, and not one address beyond', () => {
    const addresses = [...new Set(edgesOf(v4Ranges, V4_BITS).map(formatV4))];
    const answers = membership('refused_v4', addresses);
    for (const address of addresses) assert.equal(answers.get(address), promised(v4Ranges, parseV4(address)), `${address} refused?`);
    // the edges named in issue 33: the container bridges 172.17–172.31 sit inside 172.16/12
    assert.equal(answers.get('172.31.255.255'), true);
    assert.equal(answers.get('172.32.0.0'), false);
    assert.equal(answers.get('172.15.255.255'), false);
  });

  it('refuses every IPv6 range from its first to its last address, v4-mapped and NAT64 forms included, and not one beyond', () => {
    const mapped = ['::ffff:172.31.255.255', '::ffff:8.8.8.8', '64:ff9b::ac1f:ffff', '64:ff9b::808:808'].map((text) => formatV6(parseV6(text.replace(/(\d+\.\d+\.\d+\.\d+)$/, (v4) => {
      const value = parseV4(v4);
      return `${(value >> 16n).toString(16)}:${(value & 0xffffn).toString(16)}`;
    }))));
    const addresses = [...new Set([...edgesOf(v6Ranges, V6_BITS).map(formatV6), ...mapped])];
    const answers = membership('refused_v6', addresses);
    for (const address of addresses) assert.equal(answers.get(address), promised(v6Ranges, parseV6(address)), `${address} refused?`);
    for (const address of mapped) assert.equal(answers.get(address), true, `${address}: an IPv4 destination in IPv6 clothing`);
  });

  it('agrees with the promised ranges on random addresses (property)', () => {
    const v4 = fc.sample(fc.ipV4(), 150);
    const answers = membership('refused_v4', [...new Set(v4)]);
    for (const address of v4) assert.equal(answers.get(address), promised(v4Ranges, parseV4(address)), address);
    const v6 = fc.sample(fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }), 50).map(formatV6);
    // random 128-bit values almost never fall in a small range, so also draw inside each range
    const inside = v6Ranges.flatMap((range) => fc.sample(fc.bigInt({ min: range.first, max: range.last }), 3)).map(formatV6);
    const all = [...new Set([...v6, ...inside])];
    const answersV6 = membership('refused_v6', all);
    for (const address of all) assert.equal(answersV6.get(address), promised(v6Ranges, parseV6(address)), address);
  });
});

describe('the same ranges where repository URLs are judged (isRefusedAddress)', () => {
  it('refuses every range from its first to its last address, and not one beyond, in both families', () => {
    for (const value of edgesOf(v4Ranges, V4_BITS)) assert.equal(isRefusedAddress(formatV4(value)), promised(v4Ranges, value), formatV4(value));
    for (const value of edgesOf(v6Ranges, V6_BITS)) assert.equal(isRefusedAddress(formatV6(value)), promised(v6Ranges, value), formatV6(value));
    for (const address of fc.sample(fc.ipV4(), 300)) assert.equal(isRefusedAddress(address), promised(v4Ranges, parseV4(address)), address);
    const inside = v6Ranges.flatMap((range) => fc.sample(fc.bigInt({ min: range.first, max: range.last }), 5));
    for (const value of [...inside, ...fc.sample(fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }), 100)]) {
      assert.equal(isRefusedAddress(formatV6(value)), promised(v6Ranges, value), formatV6(value));
    }
  });

  it('judges an address however it is spelled: brackets, a zone, upper case, mapped forms', () => {
    const refused = ['[::1]', '[fd00:ec2::254]', 'fe80::1%eth0', '[fe80::1%25eth0]', 'FD00:EC2::254', '::FFFF:7F00:1', '::ffff:127.0.0.1', '::ffff:172.31.255.255', '64:ff9b::10.0.0.1', '0:0:0:0:0:0:0:1'];
    for (const address of refused) assert.equal(isRefusedAddress(address), true, address);
    const allowed = ['[2606:4700::1]', '2606:4700::1%eth0', '2606:4700::1', '64:ff9c::8.8.8.8', '8.8.8.8', '172.32.0.0'];
    for (const address of allowed) assert.equal(isRefusedAddress(address), false, address);
  });

  it('refuses what is not an address at all, rather than judging it as one', () => {
    for (const text of ['', 'localhost', 'not-an-address', '8.8.8.8.', ' 8.8.8.8', '8.8.8.8 ', '08.8.8.8', '8.8.8', '[8.8.8.8', '8.8.8.8]', '[]', 'example.com', '2606:4700::1::1',
      // brackets only around the whole word: stripped elsewhere, these would read as the public a::1 and 2606:4700::1abc
      'a[::1]', '[2606:4700::1]abc']) {
      assert.equal(isRefusedAddress(text), true, JSON.stringify(text));
    }
  });
});

describe('loopback where webhook destinations are judged (isLoopbackAddress)', () => {
  it('holds 127.0.0.0/8, ::1 and 127/8 mapped into IPv6 at their edges, in every spelling, and nothing else', () => {
    for (const address of ['127.0.0.0', '127.0.0.1', '127.255.255.255', '::1', '[::1]', '0:0:0:0:0:0:0:1', '::ffff:127.0.0.1', '::ffff:7f00:0', '::ffff:7fff:ffff', '[::ffff:127.0.0.1]', '::1%lo', '[::1%25lo]', '127.0.0.1%lo']) {
      assert.equal(isLoopbackAddress(address), true, address);
    }
    for (const address of ['126.255.255.255', '128.0.0.0', '::2', '::', '::ffff:126.255.255.255', '::ffff:128.0.0.0', '::ffff:8.8.8.8', '64:ff9b::127.0.0.1', '10.0.0.1', 'localhost', '', 'a[::1]', '[::1]x', '::[1]', '[::]1', '127.0.0.1.', '::1::']) {
      assert.equal(isLoopbackAddress(address), false, address);
    }
  });
});

describe('IPv6 egress with a route', () => {
  // The namespace is given an IPv6 route to fd00:ec2::254 (the metadata service's address, in
  // fc00::/7) by holding that address itself, and a listener the test starts answers there. The
  // connection first succeeds without the filter (so the route and the listener are real), then the
  // filter is loaded and the same connection is dropped in the output chain and counted as refused.
  it('drops a connection the namespace could otherwise make, and counts it', () => {
    const probe = `
const net = require('node:net');
const { execFileSync } = require('node:child_process');
const attempt = () => new Promise((done) => {
  const socket = net.connect({ host: 'fd00:ec2::254', port: 8080, timeout: 400 });
  socket.on('connect', () => { socket.destroy(); done('connected'); });
  socket.on('timeout', () => { socket.destroy(); done('dropped'); });
  socket.on('error', (error) => done('failed ' + error.code));
});
const listener = net.createServer((socket) => { socket.on('error', () => {}); socket.end('secret'); }).listen(8080, 'fd00:ec2::254', async () => {
  const before = await attempt();
  execFileSync('nft', ['-f', process.argv[2]]);
  const after = await attempt();
  const counted = /packets (\\d+)/.exec(execFileSync('nft', ['list', 'counter', 'inet', '${NFT_TABLE}', 'refused'], { encoding: 'utf8' }))[1];
  console.log(JSON.stringify({ before, after, counted: Number(counted) }));
  listener.close();
});`;
    const probeFile = join(mkdtempSync(join(tmpdir(), 'agentd-edges-probe-')), 'probe.cjs');
    writeFileSync(probeFile, probe);
    const { stdout } = inFreshNamespace(`set -e
ip link set lo up
ip -6 addr add fd00:ec2::254/128 dev lo nodad
ip -6 route get fd00:ec2::254 >/dev/null
'${process.execPath}' '${probeFile}' '${rulesFile()}'`);
    assert.deepEqual(JSON.parse(stdout), { before: 'connected', after: 'dropped', counted: JSON.parse(stdout).counted });
    assert.ok(JSON.parse(stdout).counted > 0, `the filter counted the refused packets: ${stdout}`);
  });
});
