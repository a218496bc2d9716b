import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isRefusedAddress, REFUSED_V4, REFUSED_V6 } from '../../src/workspace/refused-destinations.ts';
import { filterRules } from '../../src/sandbox/runner/network.ts';
import { DestinationRefused, pinDestination } from '../../src/workspace/repository-destination.ts';

test('the refused addresses: private, loopback, link-local, CGNAT, metadata, mapped and NAT64 forms; public ones pass', () => {
  for (const address of ['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '100.64.0.1', '169.254.169.254', '0.0.0.0', '224.0.0.1', '::1', '::', '::ffff:127.0.0.1', '::ffff:10.0.0.1', '64:ff9b::a00:1', 'fd00:ec2::254', 'fe80::1', '[::1]', 'not-an-address']) {
    assert.equal(isRefusedAddress(address), true, address);
  }
  for (const address of ['8.8.8.8', '140.82.112.3', '2606:4700::6810:84e5', '2a00:1450:4001:80b::200e']) assert.equal(isRefusedAddress(address), false, address);
});

test('the sandbox\'s network filter is written from the same list', () => {
  const rules = filterRules();
  for (const network of [...REFUSED_V4, ...REFUSED_V6]) assert.ok(rules.includes(network), network);
});

const resolver = (answers: Record<string, string[]>) => async (host: string) => answers[host] ?? [];

test('an https host is resolved once, judged, and pinned through curl\'s resolve list', async () => {
  const pinned = await pinDestination('https://git.example.test/team/repo.git', resolver({ 'git.example.test': ['140.82.112.3'] }));
  assert.deepEqual(pinned, { url: 'https://git.example.test/team/repo.git', config: ['http.curloptResolve=git.example.test:443:140.82.112.3'], sshOptions: [] });
  const v6 = await pinDestination('http://git.example.test:8080/r.git', resolver({ 'git.example.test': ['2606:4700::1'] }));
  assert.deepEqual(v6.config, ['http.curloptResolve=git.example.test:8080:[2606:4700::1]']);
});

test('git:// and ssh connect to the judged address; ssh keeps the name for known hosts', async () => {
  const answers = resolver({ 'git.example.test': ['140.82.112.3'] });
  assert.equal((await pinDestination('git://git.example.test/r.git', answers)).url, 'git://140.82.112.3/r.git');
  const ssh = await pinDestination('ssh://git@git.example.test:2222/r.git', answers);
  assert.equal(ssh.url, 'ssh://git@140.82.112.3:2222/r.git');
  assert.deepEqual(ssh.sshOptions, ['-o', 'HostKeyAlias=git.example.test']);
  const scp = await pinDestination('git@git.example.test:team/r.git', answers);
  assert.equal(scp.url, 'git@140.82.112.3:team/r.git');
});

test('a name with any refused address, a refused literal, or no address at all is refused', async () => {
  const rebinding = resolver({ 'mixed.example.test': ['140.82.112.3', '10.0.0.5'], 'inside.example.test': ['169.254.169.254'] });
  await assert.rejects(pinDestination('https://mixed.example.test/r.git', rebinding), (error) => error instanceof DestinationRefused && /at 10\.0\.0\.5/.test(error.message));
  await assert.rejects(pinDestination('https://inside.example.test/r.git', rebinding), DestinationRefused);
  await assert.rejects(pinDestination('https://[::1]/r.git', rebinding), DestinationRefused);
  await assert.rejects(pinDestination('git@192.168.0.10:r.git', rebinding), DestinationRefused);
  await assert.rejects(pinDestination('https://nowhere.example.test/r.git', rebinding), /has no address/);
  await assert.rejects(pinDestination('https://broken.example.test/r.git', async () => Promise.reject(Object.assign(new Error('x'), { code: 'ENOTFOUND' }))), /could not be resolved: ENOTFOUND/);
});
