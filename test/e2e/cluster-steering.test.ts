// CONTRACT.md §18–§19: steering works from any instance of a cluster. A steer taken by beta for a
// turn running on alpha reaches it once (202 `steered`, one `turn.steered`, the model's next request
// shows it), answers the same to a retry on either instance, and, raced against the turn's end,
// becomes a turn of its own instead of being lost or shown twice. Real processes on a real
// PostgreSQL, the fake provider.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { http } from '../support/http.ts';
import type { AgentdProcess } from '../support/agentd-process.ts';
import type { FakeRequest } from '../support/fake-provider.ts';
import { until, useTestCluster } from '../support/cluster.ts';

function timesIn(request: FakeRequest, text: string): number {
  return JSON.stringify(request.body).split(text).length - 1;
}

describe('steering from another instance of a cluster', () => {
  const cluster = useTestCluster(() => ['--turn-lease-seconds', '10']);
  const { start, ended } = cluster;
  const newSession = async (agentd: AgentdProcess) => (await http('POST', `${agentd.url}/v1/sessions`, { body: {} })).json;
  const submit = async (agentd: AgentdProcess, sessionId: string, input: string) =>
    (await http('POST', `${agentd.url}/v1/sessions/${sessionId}/turns`, { body: { input } })).json;
  const steer = (agentd: AgentdProcess, sessionId: string, input: string, extra: Record<string, unknown> = {}) =>
    http('POST', `${agentd.url}/v1/sessions/${sessionId}/turns`, { body: { input, steer: true, ...extra } });
  const requestsOf = (opening: string) => cluster.fake.requests.filter((request) => request.dialect && timesIn(request, opening) > 0);

  it('a steer on beta reaches the turn running on alpha once; retries on either instance answer the same', async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    const watcher = await cluster.subscribe(alpha);
    const session = await newSession(alpha);
    const opening = `steer across ${randomUUID()}`;
    cluster.fake.route(opening, { kind: 'slow-first-byte', delayMs: 2500, text: 'I would have stopped here.' }, { kind: 'reply', text: 'Taking the steer into account.' });
    const turn = await submit(alpha, session.id, opening);
    await until('the first model request', async () => (requestsOf(opening).length === 1 ? true : undefined));

    const steerId = randomUUID();
    const started = performance.now();
    const answer = await steer(beta, session.id, 'one more thing from beta', { clientRequestId: steerId });
    const answeredMs = Math.round(performance.now() - started);
    assert.deepEqual([answer.status, answer.json.delivery, answer.json.id], [202, 'steered', turn.id], answer.text);
    assert.equal((await ended(alpha, turn.id)).status, 'completed');

    const requests = requestsOf(opening);
    assert.deepEqual(requests.map((request) => timesIn(request, 'one more thing from beta')), [0, 1], 'the next request shows it, once');
    const result = (await http('GET', `${beta.url}/v1/turns/${turn.id}/result`)).json;
    assert.equal(result.output.assistantText, 'Taking the steer into account.');
    const steeredEvent = await watcher.waitForType('turn.steered', turn.id);
    assert.equal(steeredEvent.data.data.text, 'one more thing from beta');

    for (const agentd of [alpha, beta]) {
      const retry = await steer(agentd, session.id, 'one more thing from beta', { clientRequestId: steerId });
      assert.deepEqual([retry.status, retry.json.delivery, retry.json.id], [202, 'steered', turn.id], `retry on ${agentd.url}`);
    }
    const conflict = await steer(alpha, session.id, 'something else', { clientRequestId: steerId });
    assert.deepEqual([conflict.status, conflict.json.error?.code], [409, 'idempotency_conflict']);
    assert.equal(requestsOf(opening).length, 2, 'no retry reached the model');
    assert.equal(watcher.ofTurn(turn.id).filter((event) => event.type === 'turn.steered').length, 1, 'one turn.steered');
    console.log(`steer on beta answered after ${answeredMs} ms`);
  });

  it('steers on beta racing the end of alpha\'s turn: each is shown exactly once, or is a turn of its own', async () => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    const deliveries = { steered: 0, queued: 0 };
    for (let round = 0; round < 10; round += 1) {
      const session = await newSession(alpha);
      const opening = `cluster race ${round} ${randomUUID()}`;
      const steered = `racing steer ${round}`;
      cluster.fake.route(opening, { kind: 'slow-first-byte', delayMs: 1200, text: 'quick answer' }, { kind: 'reply', text: 'saw it' });
      const turn = await submit(alpha, session.id, opening);
      // from before the request ends to after the turn is stored
      await new Promise((resolve) => setTimeout(resolve, 150 + round * 170));
      const answer = await steer(beta, session.id, steered);
      assert.equal(answer.status, 202, answer.text);
      deliveries[answer.json.delivery as 'steered' | 'queued'] += 1;
      assert.equal((await ended(alpha, turn.id)).status, 'completed');
      const requests = requestsOf(opening);
      if (answer.json.delivery === 'steered') {
        assert.equal(answer.json.id, turn.id);
        const shown = requests.map((request) => timesIn(request, steered));
        assert.equal(shown.at(-1), 1, `round ${round}: the turn's last request shows it once (${shown})`);
        assert.ok(shown.slice(0, -1).every((times) => times === 0), `round ${round}: no earlier request did (${shown})`);
      } else {
        assert.equal(answer.json.delivery, 'queued');
        assert.notEqual(answer.json.id, turn.id);
        assert.equal((await ended(beta, answer.json.id)).status, 'completed');
        const all = requestsOf(opening);
        assert.equal(timesIn(all.at(-1)!, steered), 1, `round ${round}: its own turn showed it`);
        assert.ok(all.slice(0, -1).every((request) => timesIn(request, steered) === 0), `round ${round}: the first turn never did`);
      }
    }
    console.log(`deliveries ${JSON.stringify(deliveries)}`);
    assert.ok(deliveries.steered > 0, `some steers joined the turn (${JSON.stringify(deliveries)})`);
    assert.ok(deliveries.queued > 0, `some steers became turns of their own (${JSON.stringify(deliveries)})`);
  });
});
