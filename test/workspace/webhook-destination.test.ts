// Where a webhook may be delivered (CONTRACT.md §20, §17), judged without the binary: the unit
// the mutation guard list runs against (scripts/mutation-guards.mjs "webhook-destination").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkedLookup, hostOf, reachOf, webhookAddressProblem, webhookHostProblem, WebhookDestinationRefused } from '../../src/workspace/webhook-destination.ts';

const open = { allowLoopback: false, loopbackOnly: false };
const loopbackAllowed = { allowLoopback: true, loopbackOnly: false };
const plainHttp = { allowLoopback: true, loopbackOnly: true };

test('the reach of a URL: plain http: is for loopback only', () => {
  assert.deepEqual(reachOf(new URL('http://127.0.0.1:9/x'), true), { allowLoopback: true, loopbackOnly: true });
  assert.deepEqual(reachOf(new URL('https://hooks.example.test/x'), false), { allowLoopback: false, loopbackOnly: false });
  assert.equal(hostOf(new URL('https://[::1]:8/x')), '::1');
  assert.equal(hostOf(new URL('https://Hooks.Example.test/x')), 'hooks.example.test');
});

test('each address judged: public passes; loopback only when allowed; private, metadata and CGNAT never; http: only to loopback', () => {
  assert.equal(webhookAddressProblem('93.184.216.34', open), null);
  assert.equal(webhookAddressProblem('127.0.0.1', loopbackAllowed), null);
  assert.equal(webhookAddressProblem('::1', plainHttp), null);
  assert.match(webhookAddressProblem('127.0.0.1', open)!, /^127\.0\.0\.1 is a loopback address \(pass --allow-loopback-webhooks/);
  assert.match(webhookAddressProblem('10.0.0.1', loopbackAllowed)!, /^10\.0\.0\.1 is a private, link-local, metadata or otherwise refused address$/);
  assert.match(webhookAddressProblem('169.254.169.254', open)!, /is a private/);
  assert.match(webhookAddressProblem('93.184.216.34', plainHttp)!, /^93\.184\.216\.34 is not a loopback address, and http: is only for a loopback receiver/);
});

test('a name is refused when any address it resolves to is; one that does not resolve now passes (each delivery judges again)', async () => {
  const resolver = (answers: Record<string, string[]>) => async (host: string) => {
    if (!(host in answers)) throw Object.assign(new Error('no such name'), { code: 'ENOTFOUND' });
    return answers[host];
  };
  const resolve = resolver({ 'public.test': ['93.184.216.34'], 'mixed.test': ['93.184.216.34', '10.0.0.7'] });
  assert.equal(await webhookHostProblem(new URL('https://public.test/x'), open, resolve), null);
  assert.equal(await webhookHostProblem(new URL('https://absent.test/x'), open, resolve), null);
  assert.equal(await webhookHostProblem(new URL('https://mixed.test/x'), open, resolve), 'mixed.test resolves to 10.0.0.7 is a private, link-local, metadata or otherwise refused address');
  assert.match((await webhookHostProblem(new URL('https://127.0.0.1/x'), open, resolve))!, /loopback address/);
  assert.equal(await webhookHostProblem(new URL('https://93.184.216.34/x'), open, resolve), null);
});

test('the connection\'s lookup hands the socket the address judged, and refuses a name with any refused address or none', async () => {
  const answers: Record<string, string[]> = { 'public.test': ['93.184.216.34', '93.184.216.35'], 'v6.test': ['2606:4700::1'], 'mixed.test': ['93.184.216.34', '127.0.0.1'], 'empty.test': [] };
  const lookup = checkedLookup(open, async (host) => answers[host]);
  const call = (host: string, all: boolean) => new Promise<{ error: NodeJS.ErrnoException | null; address: unknown; family?: number }>((resolve) => {
    lookup(host, { all } as any, ((error: NodeJS.ErrnoException | null, address: unknown, family?: number) => resolve({ error, address, family })) as any);
  });
  assert.deepEqual(await call('public.test', false), { error: null, address: '93.184.216.34', family: 4 });
  assert.deepEqual(await call('v6.test', true), { error: null, address: [{ address: '2606:4700::1', family: 6 }], family: undefined });
  const mixed = await call('mixed.test', false);
  assert.ok(mixed.error instanceof WebhookDestinationRefused);
  assert.equal(mixed.error.code, 'EWEBHOOKREFUSED');
  assert.equal(mixed.error.message, 'mixed.test resolves to 127.0.0.1 is a loopback address (pass --allow-loopback-webhooks to allow it)');
  const empty = await call('empty.test', false);
  assert.equal(empty.error?.message, 'empty.test has no address');
});
