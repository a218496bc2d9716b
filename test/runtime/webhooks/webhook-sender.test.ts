// The sender's connection goes only where the egress rules allow, judged on the address it
// connects to (DNS rebinding): a name that resolved to a public address at start-up and resolves
// to loopback or a private address now is refused, and the receiver hears nothing. The resolver is
// the one stand-in here (a rebinding DNS server); the receiver and the connections are real.
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { WebhookSender } from '../../../src/runtime/webhooks/webhook-sender.ts';
import { retryDelayMs, FIRST_RETRY_MS, LONGEST_RETRY_MS } from '../../../src/runtime/webhooks/retry-schedule.ts';
import { startWebhookReceiver } from '../../support/webhook-receiver.ts';

const SECRET = 'k'.repeat(40);
const never = new AbortController().signal;

describe('the webhook sender', async () => {
  const receiver = await startWebhookReceiver(SECRET);
  after(() => receiver.close());
  const rebinding = (answer: string[]) => async () => answer;

  it('connects to the address its checked lookup answered: a name resolving to loopback reaches the receiver only with the flag', async () => {
    const allowed = new WebhookSender({ secret: SECRET, allowLoopback: true, resolve: rebinding(['127.0.0.1']) });
    const result = await allowed.send(`http://hooks.rebind.test:${receiver.port}/x`, '{"a":1}', never);
    assert.deepEqual(result, { delivered: true, status: 204 });
    assert.equal(receiver.received.length, 1);
    assert.equal(receiver.received[0].signatureValid, true);
    allowed.close();
  });

  it('refuses at connect time a name that now resolves to loopback, private or metadata addresses', async () => {
    const before = receiver.received.length;
    for (const [allowLoopback, answer] of [
      [false, ['127.0.0.1']],
      [false, ['93.184.216.34', '127.0.0.1']],
      [true, ['10.0.0.8']],
      [true, ['169.254.169.254']],
      [true, ['::ffff:127.0.0.1', '192.168.0.1']],
    ] as [boolean, string[]][]) {
      const sender = new WebhookSender({ secret: SECRET, allowLoopback, resolve: rebinding(answer) });
      // https: to a host rebound to loopback without the flag; http: (loopback-only) with it
      const scheme = allowLoopback ? 'http' : 'https';
      const result = await sender.send(`${scheme}://hooks.rebind.test:${receiver.port}/x`, '{}', never);
      assert.equal(result.delivered, false, answer.join(','));
      assert.match((result as { reason: string }).reason, /^refused destination: hooks\.rebind\.test resolves to /);
      sender.close();
    }
    assert.equal(receiver.received.length, before, 'no refused connection reached the receiver');
  });

  it('refuses plain http: to anything but loopback, and an IP literal by itself (no lookup happens)', async () => {
    const sender = new WebhookSender({ secret: SECRET, allowLoopback: true, resolve: rebinding(['93.184.216.34']) });
    assert.match((await sender.send('http://hooks.rebind.test/x', '{}', never) as { reason: string }).reason, /http: is only for a loopback receiver/);
    assert.match((await sender.send('https://10.9.9.9/x', '{}', never) as { reason: string }).reason, /^refused destination: 10\.9\.9\.9 is a private/);
    sender.close();
  });

  it('gives up on a receiver that does not answer within the timeout, and on the server stopping', async () => {
    receiver.answer = () => 'hold';
    const sender = new WebhookSender({ secret: SECRET, allowLoopback: true, timeoutMs: 300 });
    const started = Date.now();
    const late = await sender.send(`http://127.0.0.1:${receiver.port}/x`, '{}', never);
    assert.deepEqual(late, { delivered: false, status: null, reason: 'no answer within 0.3 s' });
    assert.ok(Date.now() - started < 3_000);
    const stopping = new AbortController();
    const pending = sender.send(`http://127.0.0.1:${receiver.port}/x`, '{}', stopping.signal);
    stopping.abort();
    assert.deepEqual(await pending, { delivered: false, status: null, reason: 'the server is stopping' });
    assert.equal(sender.freeSlots, 8);
    receiver.answer = (n) => (n % 2 === 0 ? 302 : 500);
    const answered = await sender.send(`http://127.0.0.1:${receiver.port}/x`, '{}', never);
    assert.equal(answered.delivered, false, 'a redirect or an error is not a delivery');
    sender.close();
  });
});

describe('the retry schedule', () => {
  it('doubles from 1-2 s to at most 30 min, with up to half of each step taken off at random', () => {
    assert.equal(retryDelayMs(1, () => 1), FIRST_RETRY_MS);
    assert.equal(retryDelayMs(1, () => 0), FIRST_RETRY_MS / 2);
    assert.equal(retryDelayMs(2, () => 1), FIRST_RETRY_MS * 2);
    assert.equal(retryDelayMs(5, () => 1), FIRST_RETRY_MS * 16);
    assert.equal(retryDelayMs(40, () => 1), LONGEST_RETRY_MS);
    assert.equal(retryDelayMs(1000, () => 0), LONGEST_RETRY_MS / 2);
    assert.ok(retryDelayMs(1) <= 30_000, 'CONTRACT: the first retry comes within 30 s');
    // attempts over 24 h: enough that an outage of most of a day is still met by a retry
    let elapsed = 0;
    let attempts = 0;
    while (elapsed < 24 * 3600_000) elapsed += retryDelayMs(++attempts, () => 1);
    assert.ok(attempts > 40 && attempts < 70, `${attempts} attempts in 24 h`);
  });
});
