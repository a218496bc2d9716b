import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { once } from 'node:events';
import type { SandboxClient } from '../../src/exec/sandbox-client.ts';
import { NFT_TABLE } from '../../src/sandbox/runner/network.ts';
import { RUNTIMES, sandboxClient, scratchDirectory, shell } from './support.ts';

/** The process holding the runner's network namespace: its child running `read _`. */
function holderPid(runnerPid: number): number {
  const children = readFileSync(`/proc/${runnerPid}/task/${runnerPid}/children`, 'utf8').trim().split(/\s+/).map(Number);
  const holder = children.find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('read _'));
  assert.ok(holder, 'the runner holds a network namespace');
  return holder;
}

function counter(holder: number, name: 'refused' | 'allowed'): number {
  const listing = execFileSync('nsenter', ['-t', String(holder), '--user', '--net', 'nft', 'list', 'counter', 'inet', NFT_TABLE, name], { encoding: 'utf8' });
  return Number(/packets (\d+)/.exec(listing)![1]);
}

/** A TCP connect from inside the sandbox with a short timeout; prints the outcome. */
function connectScript(host: string, port: number): string {
  const family = host.includes(':') ? 'AF_INET6' : 'AF_INET';
  return `python3 -c "
import socket
s = socket.socket(socket.${family}); s.settimeout(0.5)
try:
    s.connect(('${host}', ${port})); print('connected')
except OSError as e:
    print('failed', e)
"`;
}

for (const runtime of RUNTIMES) describe(`the sandbox network (${runtime})`, () => {
  let client: SandboxClient;
  let holder: number;
  let hostListener: Server;
  let hostConnections = 0;

  before(async () => {
    client = sandboxClient(scratchDirectory(), {}, runtime);
    await client.start();
    holder = holderPid(client.runnerPid!);
    hostListener = createServer((socket) => {
      hostConnections++;
      socket.end('host secret\n');
    });
    hostListener.listen(0, '127.0.0.1');
    await once(hostListener, 'listening');
  });
  after(async () => {
    hostListener.close();
    await client.close();
  });

  it('refuses a listener on the host loopback', async () => {
    const port = (hostListener.address() as { port: number }).port;
    const before = counter(holder, 'refused');
    const { output } = await shell(client, `${connectScript('127.0.0.1', port)}; ${connectScript('10.0.2.2', port)}`);
    assert.doesNotMatch(output, /connected|host secret/);
    assert.equal(hostConnections, 0);
    assert.ok(counter(holder, 'refused') > before, 'the filter refused it');
  });

  for (const destination of ['10.0.0.1', '169.254.169.254', '100.64.0.1', '172.16.0.1', '192.168.1.1', '::1', '::ffff:10.0.0.1']) {
    it(`refuses ${destination} in the filter`, async () => {
      const before = counter(holder, 'refused');
      const { output } = await shell(client, connectScript(destination, 80));
      assert.match(output, /^failed/);
      assert.ok(counter(holder, 'refused') > before, `the filter refused ${destination}: ${output}`);
    });
  }

  // The namespace has no IPv6 route out (slirp4netns runs without IPv6), so a connection there
  // would fail before the filter and prove nothing about it. The test gives the namespace a route:
  // each destination is assigned to its loopback (from outside, as root over the holder's
  // namespaces), so the guest's packet would be delivered if the filter let it through. (fe80::/10
  // needs an interface scope; test/edges/egress-ranges.test.ts covers it with every other range.)
  for (const destination of ['fd00:ec2::254', 'fc00::1', 'fec0::1', '2001:db8::1']) {
    it(`refuses ${destination} in the filter when the namespace has a route to it`, async () => {
      const enter = ['-t', String(holder), '--user', '--net'];
      execFileSync('nsenter', [...enter, 'ip', '-6', 'addr', 'add', `${destination}/128`, 'dev', 'lo', 'nodad']);
      try {
        execFileSync('nsenter', [...enter, 'ip', '-6', 'route', 'get', destination]);
        const before = counter(holder, 'refused');
        const { output } = await shell(client, connectScript(destination, 80));
        assert.match(output, /^failed/);
        assert.ok(counter(holder, 'refused') > before, `the filter refused ${destination}: ${output}`);
      } finally {
        execFileSync('nsenter', [...enter, 'ip', '-6', 'addr', 'del', `${destination}/128`, 'dev', 'lo']);
      }
    });
  }

  it('lets a public destination out (the packet leaves through slirp4netns)', async () => {
    const refusedBefore = counter(holder, 'refused');
    const allowedBefore = counter(holder, 'allowed');
    await shell(client, connectScript('192.0.43.10', 80));
    assert.equal(counter(holder, 'refused'), refusedBefore);
    assert.ok(counter(holder, 'allowed') > allowedBefore);
  });

  it('accepts nothing inbound and cannot change its own filter', async () => {
    const { output } = await shell(client, `nft flush ruleset 2>&1; nft list ruleset 2>&1; ip link set tap0 down 2>&1; echo done`);
    // bubblewrap: the host kernel refuses (no CAP_NET_ADMIN over the namespace); gVisor: its own kernel refuses the route socket's change
    assert.match(output, runtime === 'bubblewrap' ? /Operation not permitted|not permitted/ : /RTNETLINK answers: Permission denied/);
    assert.ok(counter(holder, 'allowed') >= 0, 'the table is still there');
    const input = execFileSync('nsenter', ['-t', String(holder), '--user', '--net', 'nft', 'list', 'chain', 'inet', NFT_TABLE, 'input'], { encoding: 'utf8' });
    assert.match(input, /policy drop/);
  });
});
