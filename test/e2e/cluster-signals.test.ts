// CONTRACT.md §18, issue 30 item 6: cancel and resolve work from any instance of a cluster. A
// request of a turn running on one instance is listed and answered on another, and the owner acts
// on the answer; a cancel asked on another instance stops the owner's tool and ends the turn
// within 2 s; a turn whose owner is gone is ended by the instance that got the cancel. Real
// processes on a real PostgreSQL, the fake provider.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { http } from '../support/http.ts';
import type { AgentdProcess } from '../support/agentd-process.ts';
import { until, useTestCluster } from '../support/cluster.ts';

const TERMINAL = ['completed', 'failed', 'cancelled'];
/**
 * Long enough that no lease is lost while other test files load the machine (a turn taken over
 * before its model request would leave the fake's scripted reply to the next test), short enough
 * for the orphan's cancel to wait it out.
 */
const LEASE_SECONDS = 5;

/** The pids of the processes whose command line is exactly `argv` (a tool's command, made unique by its argument). */
function processesRunning(argv: string[]): number[] {
  const wanted = argv.join('\0');
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0$/, '') === wanted) pids.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return pids;
}

const shellCall = (callId: string, command: string[]) => ({ name: 'shell', arguments: JSON.stringify({ command }), callId });

describe('cancel and resolve from any instance of a cluster', () => {
  const cluster = useTestCluster(() => ['--turn-lease-seconds', String(LEASE_SECONDS)]);
  const { start, turnOn } = cluster;
  /** A session on `agentd` whose first turn has run: the provider and tool modules are loaded (docs/CLUSTER.md). */
  const warmSession = async (agentd: AgentdProcess) => {
    const session = (await http('POST', `${agentd.url}/v1/sessions`, { body: {} })).json;
    cluster.fake.enqueue({ kind: 'reply', text: 'warm' });
    const warmUp = (await http('POST', `${agentd.url}/v1/sessions/${session.id}/turns`, { body: { input: 'warm up' } })).json;
    await until('the warm-up turn', async () => (TERMINAL.includes((await turnOn(agentd, warmUp.id)).status) ? true : undefined));
    return session;
  };
  const requestsOn = async (agentd: AgentdProcess, turnId: string) => (await http('GET', `${agentd.url}/v1/requests?turnId=${turnId}`)).json.data;
  const resolveOn = (agentd: AgentdProcess, requestId: string, body: object) => http('POST', `${agentd.url}/v1/requests/${requestId}/resolve`, { body });

  it('a request of a turn on alpha is listed and answered on beta; a cancel on beta kills alpha\'s tool within 2 s', async (t) => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    const session = await warmSession(alpha);
    const sleeper = ['sleep', '37.25'];
    cluster.fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_sleep', sleeper)] });
    const turn = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: 'sleep a while' } })).json;

    const [request] = await until('beta to list alpha\'s request', async () => {
      const listed = await requestsOn(beta, turn.id);
      return listed.length > 0 ? listed : undefined;
    });
    assert.deepEqual([request.kind, request.turnId, request.sessionId], ['tool_approval', turn.id, session.id]);
    assert.deepEqual(request.options, ['allow_once', 'allow_session', 'deny']);
    assert.deepEqual(await requestsOn(alpha, turn.id), [request], 'both instances list the same request');
    assert.equal(processesRunning(sleeper).length, 0, 'nothing runs before the approval');

    const invalid = await resolveOn(beta, request.id, { decision: 'allow' });
    assert.deepEqual([invalid.status, invalid.json.error.code], [422, 'invalid_decision']);
    const missing = await resolveOn(beta, '00000000-0000-7000-8000-000000000000', { decision: 'deny' });
    assert.deepEqual([missing.status, missing.json.error.code], [404, 'request_not_found']);
    const resolved = await resolveOn(beta, request.id, { decision: 'allow_once' });
    assert.equal(resolved.status, 200);
    assert.deepEqual(resolved.json, request);
    for (const agentd of [beta, alpha]) {
      const again = await resolveOn(agentd, request.id, { decision: 'deny' });
      assert.deepEqual([again.status, again.json.error.code], [409, 'request_already_resolved'], 'the first answer wins on every instance');
    }

    // alpha acts on beta's answer: the tool runs there
    await until('alpha to run the approved tool', async () => (processesRunning(sleeper).length > 0 ? true : undefined));
    assert.deepEqual(await requestsOn(beta, turn.id), []);
    assert.equal((await turnOn(alpha, turn.id)).status, 'running');

    const askedAt = Date.now();
    const cancelled = await http('POST', `${beta.url}/v1/turns/${turn.id}/cancel`);
    const cancelMs = Date.now() - askedAt;
    t.diagnostic(`cancelled through the other instance in ${cancelMs} ms`);
    assert.equal(cancelled.status, 200);
    assert.deepEqual([cancelled.json.status, cancelled.json.attempt], ['cancelled', 1], 'the owner ended it, no takeover');
    // about time: the contract gives a cancel 2 s; the owner polls for marks every 500 ms (measured 491 to 648 ms, CLUSTER.md)
    assert.ok(cancelMs < 2_000, `the cancel took ${cancelMs} ms`);
    assert.deepEqual(processesRunning(sleeper), [], 'the tool\'s process was killed');
    assert.deepEqual([(await turnOn(alpha, turn.id)).status, (await turnOn(beta, turn.id)).status], ['cancelled', 'cancelled']);
    assert.doesNotMatch(alpha.stdout(), /standing down|lease lost/);
  });

  it('a waiting turn whose owner died is ended by the instance that got the cancel; its request goes with it', async (t) => {
    const alpha = await start('alpha');
    const beta = await start('beta');
    const session = await warmSession(alpha);
    cluster.fake.enqueue({ kind: 'reply', toolCalls: [shellCall('call_touch', ['touch', 'never.txt'])] });
    const turn = (await http('POST', `${alpha.url}/v1/sessions/${session.id}/turns`, { body: { input: 'make a file' } })).json;
    const [request] = await until('beta to list alpha\'s request', async () => {
      const listed = await requestsOn(beta, turn.id);
      return listed.length > 0 ? listed : undefined;
    });

    await alpha.kill();
    const askedAt = Date.now();
    const cancelled = await http('POST', `${beta.url}/v1/turns/${turn.id}/cancel`);
    const cancelMs = Date.now() - askedAt;
    t.diagnostic(`an orphan cancelled in ${cancelMs} ms (lease ${LEASE_SECONDS} s)`);
    assert.equal(cancelled.status, 200);
    assert.deepEqual([cancelled.json.status, cancelled.json.error, cancelled.json.attempt], ['cancelled', null, 2], 'taken over and cancelled, not interrupted');
    assert.ok(cancelMs < LEASE_SECONDS * 1000 + 3_000, `the cancel took ${cancelMs} ms`);
    assert.deepEqual(await requestsOn(beta, turn.id), []);
    const late = await resolveOn(beta, request.id, { decision: 'allow_once' });
    assert.deepEqual([late.status, late.json.error.code], [404, 'request_not_found'], 'a request of an ended turn cannot be answered');
    // the session is free again, on any instance
    cluster.fake.enqueue({ kind: 'reply', text: 'after' });
    const next = (await http('POST', `${beta.url}/v1/sessions/${session.id}/turns`, { body: { input: 'again' } })).json;
    const done = await until('the next turn', async () => {
      const now = await turnOn(beta, next.id);
      return TERMINAL.includes(now.status) ? now : undefined;
    });
    assert.equal(done.status, 'completed');
  });
});
