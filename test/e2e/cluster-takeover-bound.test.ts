// docs/CLUSTER.md, "A turn that crashes its instances": a turn is taken over after its lease ran out
// at most --max-turn-takeovers times; past that it ends failed instead of going round the cluster,
// killing each instance that resumes it. A handover on SIGTERM is not such a takeover. Real processes
// killed -9 on a real PostgreSQL, the fake provider hanging in every model request as a turn that
// kills its instance would.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { http } from '../support/http.ts';
import type { AgentdProcess } from '../support/agentd-process.ts';
import { until, useTestCluster } from '../support/cluster.ts';
import { metricsUrlOf, sample } from '../telemetry/prometheus-text.ts';

const LEASE_SECONDS = 4;
const BOUND = ['--turn-lease-seconds', String(LEASE_SECONDS), '--max-turn-takeovers', '1'];

describe('the bound on takeovers after a lease ran out', () => {
  const cluster = useTestCluster();
  const start = (instanceId: string) => cluster.start(instanceId, BOUND);
  const requestsOf = (marker: string) => cluster.fake.requests.filter((request) => request.dialect !== null && JSON.stringify(request.body).includes(marker)).length;
  const modelAsked = (marker: string, times: number) => until(`model request ${times} of ${marker}`, async () => (requestsOf(marker) >= times ? true : undefined));
  const attemptOn = (agentd: AgentdProcess, turnId: string, attempt: number) =>
    until(`attempt ${attempt} of turn ${turnId}`, async () => ((await cluster.turnOn(agentd, turnId)).attempt === attempt ? true : undefined), 30_000);

  /**
   * A turn started on alpha whose model hangs twice, then answers `lastReply`; alpha is killed and
   * beta resumes it (attempt 2, its one takeover), asking the model a second time.
   */
  const takenOverOnce = async (marker: string, lastReply: string) => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    cluster.fake.route(marker, { kind: 'hang', afterText: 'working' }, { kind: 'hang', afterText: 'working' }, { kind: 'reply', text: lastReply });
    const session = (await http('POST', `${alpha.url}/v1/sessions`, { body: {} })).json;
    const turn = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: `${marker}: the turn` } })).json;
    await modelAsked(marker, 1);
    await alpha.kill();
    await attemptOn(beta, turn.id, 2);
    await modelAsked(marker, 2);
    return { beta, session, turn };
  };

  it('a turn whose instances die under it is resumed once, then ended failed, not asked of the model again', async () => {
    const marker = 'takeover-bound-crash';
    const { beta, session, turn } = await takenOverOnce(marker, 'never asked');
    const gamma = await cluster.start('gamma', [...BOUND, '--metrics-port', '0']);
    const events = await cluster.subscribe(gamma);
    await beta.kill();

    const ended = await cluster.ended(gamma, turn.id);
    assert.equal(ended.status, 'failed');
    assert.equal(ended.attempt, 3);
    assert.match(ended.error, /^interrupted: its lease ran out unrenewed after 1 takeovers \(--max-turn-takeovers\)/);
    const failed = await events.waitForType('turn.failed', turn.id, 30_000);
    assert.equal(failed.data.data.error, ended.error);
    assert.equal(requestsOf(marker), 2, 'the model was not asked a third time');
    assert.match(gamma.stdout(), /after its last allowed takeover: ended it failed/);
    // counted among the turns ended, as an owner's end is
    const metricsUrl = await until('gamma\'s metrics address', async () => metricsUrlOf(gamma.stdout()));
    assert.equal(sample((await http('GET', metricsUrl)).text, 'agentd_turns_total', { status: 'failed' }), 1);
    // the session is free for the next turn
    cluster.fake.route('takeover-bound-next', { kind: 'reply', text: 'next one' });
    const next = (await http('POST', `${gamma.url}/v1/sessions/${session.id}/turns`, { body: { input: 'takeover-bound-next' } })).json;
    assert.equal((await cluster.ended(gamma, next.id)).status, 'completed');
  });

  it('a handover on SIGTERM does not count: the turn taken over once already is handed over and finishes', async () => {
    const marker = 'takeover-bound-handover';
    const { beta, turn } = await takenOverOnce(marker, 'finished on gamma');
    const gamma = await start('gamma');
    await beta.stop();
    assert.match(beta.stdout(), /turn handed over to another instance/);

    const ended = await cluster.ended(gamma, turn.id);
    assert.deepEqual([ended.status, ended.attempt, ended.error], ['completed', 3, null]);
    assert.equal(requestsOf(marker), 3);
  });
});
