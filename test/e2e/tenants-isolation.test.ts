import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { FakeProvider } from '../support/fake-provider.ts';
import { waitForTenantTurn, type TenantClient, type TenantServer } from '../tenancy/support/tenant-server.ts';
import { useTenantsOnFakeProvider } from '../tenancy/support/tenants-on-fake-provider.ts';

describe('two tenants on one agentd (PostgreSQL, a database and role each)', () => {
  let fake!: FakeProvider;
  let hosted!: TenantServer;
  let alice!: TenantClient;
  let bob!: TenantClient;
  const started = useTenantsOnFakeProvider({ tenantCount: 2 });
  before(() => {
    ({ fake, hosted } = started);
    [alice, bob] = hosted.tenants;
  });

  it('chooses the tenant by bearer token per request; anything else is 401', async () => {
    for (const headers of [{} as Record<string, string>, { authorization: 'Bearer ' + 'x'.repeat(48) }, { authorization: `bearer ${alice.token}` }, { authorization: `Bearer  ${alice.token}` }, { authorization: alice.token }]) {
      const response = await hosted.request('GET', '/v1/sessions', { headers });
      assert.equal(response.status, 401);
      assert.equal(response.json.error.code, 'unauthorized');
    }
    // the token in the query string is never read
    assert.equal((await hosted.request('GET', `/v1/sessions?access_token=${alice.token}`)).status, 401);
    assert.equal((await alice.request('GET', '/readyz')).json.ready, true);
    const models = await bob.request('GET', '/v1/models');
    assert.deepEqual(models.json.data.map((model: any) => model.id), ['fake-responses', 'fake-anthropic', 'fake-chat']);
  });

  it('keeps every session, turn, request, history, fork, cancel and agent list to its tenant: another tenant gets plain 404s', async () => {
    const aliceEvents = alice.events(0);
    const bobEvents = bob.events(0);
    await Promise.all([aliceEvents.opened, bobEvents.opened]);
    const session = (await alice.request('POST', '/v1/sessions', { body: { title: 'alice only' } })).json;
    assert.equal(session.cwd, alice.workspaceRoot);
    fake.enqueue({ kind: 'reply', text: 'Let me ask.', toolCalls: [{ name: 'ask_question', arguments: JSON.stringify({ question: 'Which colour?', options: ['red', 'blue'] }), callId: 'call_ask' }] });
    const turn = (await alice.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'private prompt of alice' } })).json;
    const created = await aliceEvents.waitForType('request.created', turn.id);
    const humanRequest = created.data.data;

    const notFound = [
      ['GET', `/v1/sessions/${session.id}`, 'session_not_found'],
      ['PATCH', `/v1/sessions/${session.id}`, 'session_not_found', { title: 'taken' }],
      ['DELETE', `/v1/sessions/${session.id}`, 'session_not_found'],
      ['GET', `/v1/sessions/${session.id}/history`, 'session_not_found'],
      ['POST', `/v1/sessions/${session.id}/fork`, 'session_not_found', {}],
      ['POST', `/v1/sessions/${session.id}/turns`, 'session_not_found', { input: 'hijack' }],
      ['GET', `/v1/turns/${turn.id}`, 'turn_not_found'],
      ['GET', `/v1/turns/${turn.id}/result`, 'turn_not_found'],
      ['POST', `/v1/turns/${turn.id}/cancel`, 'turn_not_found'],
      ['GET', `/v1/turns/${turn.id}/agents`, 'turn_not_found'],
      ['POST', `/v1/requests/${humanRequest.id}/resolve`, 'request_not_found', { decision: 'red' }],
    ] as const;
    for (const [method, path, code, body] of notFound) {
      const response = await bob.request(method, path, body === undefined ? {} : { body });
      assert.equal(response.status, 404, `${method} ${path}`);
      assert.equal(response.json.error.code, code, `${method} ${path}`);
    }
    assert.deepEqual((await bob.request('GET', '/v1/sessions?archive=all')).json.data, []);
    assert.deepEqual((await bob.request('GET', '/v1/turns')).json.data, []);
    assert.deepEqual((await bob.request('GET', `/v1/turns?sessionId=${session.id}`)).json.data, []);
    assert.deepEqual((await bob.request('GET', '/v1/requests')).json.data, []);
    assert.deepEqual((await bob.request('GET', `/v1/requests?turnId=${turn.id}`)).json.data, []);

    // nothing bob tried changed alice's things: her turn still waits on her question
    assert.equal((await alice.request('GET', `/v1/turns/${turn.id}`)).json.status, 'waiting_for_input');
    assert.equal((await alice.request('GET', '/v1/requests')).json.data.length, 1);
    fake.enqueue({ kind: 'reply', text: 'Red it is.' });
    assert.equal((await alice.request('POST', `/v1/requests/${humanRequest.id}/resolve`, { body: { decision: 'red' } })).status, 200);
    assert.equal((await waitForTenantTurn(alice, turn.id)).status, 'completed');
    assert.equal((await alice.request('GET', `/v1/sessions/${session.id}`)).json.title, 'alice only');
    assert.equal((await alice.request('GET', `/v1/sessions/${session.id}/history`)).json.data.length, 1);

    // bob's own turn: his event ids count from 1 in his own log, and his stream shows only his events
    const bobSession = (await bob.request('POST', '/v1/sessions', { body: {} })).json;
    const bobTurn = (await bob.request('POST', `/v1/sessions/${bobSession.id}/turns`, { body: { input: 'hello' } })).json;
    await bobEvents.waitForType('turn.completed', bobTurn.id);
    await aliceEvents.waitForType('turn.completed', turn.id);
    assert.equal(bobEvents.events[0].id, '1');
    assert.ok(bobEvents.events.every((event) => event.data.sessionId === bobSession.id), 'bob sees only his session');
    assert.ok(aliceEvents.events.every((event) => event.data.sessionId === session.id), 'alice sees only hers');
    assert.ok(!JSON.stringify(bobEvents.events).includes('private prompt of alice'));
    const aliceIds = aliceEvents.events.map((event) => Number(event.id));
    assert.deepEqual(aliceIds, aliceIds.map((_, index) => index + 1), 'alice counts 1, 2, 3 … in her own log');
    aliceEvents.close();
    bobEvents.close();

    // bob's fork, turn list and session list hold only his; alice's fork of her own works
    assert.equal((await alice.request('POST', `/v1/sessions/${session.id}/fork`, { body: {} })).status, 201);
    assert.deepEqual((await bob.request('GET', '/v1/sessions')).json.data.map((entry: any) => entry.id), [bobSession.id]);
    assert.equal((await alice.request('GET', '/v1/sessions')).json.data.length, 2);
  });

  it('refuses a cwd outside the tenant workspace root with 403, another tenant\'s root included', async () => {
    for (const cwd of [bob.workspaceRoot, '/', '/tmp', `${alice.workspaceRoot}/../${bob.workspaceRoot.split('/').pop()}`]) {
      const response = await alice.request('POST', '/v1/sessions', { body: { cwd } });
      assert.equal(response.status, 403, cwd);
      assert.equal(response.json.error.code, 'workspace_not_allowed');
    }
    const forked = await alice.request('POST', '/v1/sessions', { body: {} });
    const fork = await alice.request('POST', `/v1/sessions/${forked.json.id}/fork`, { body: { cwd: bob.workspaceRoot } });
    assert.equal(fork.status, 403);
  });

  it('offers no tool that executes or writes without a sandbox runner; the agent still reads, plans and asks', async () => {
    const session = (await bob.request('POST', '/v1/sessions', { body: {} })).json;
    const sent = fake.requests.length;
    fake.enqueue(
      { kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['touch', `${bob.workspaceRoot}/pwned`] }), callId: 'call_shell' }] },
      { kind: 'reply', text: 'done' },
    );
    const turn = (await bob.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'make a file' } })).json;
    assert.equal((await waitForTenantTurn(bob, turn.id)).status, 'completed');
    const offered = fake.requests[sent].body.tools.map((tool: any) => tool.name);
    assert.ok(!offered.includes('shell') && !offered.includes('apply_patch'), offered.join(', '));
    for (const kept of ['read_file', 'list_dir', 'update_plan', 'ask_question']) assert.ok(offered.includes(kept), kept);
    const output = fake.requests[sent + 1].body.input.find((item: any) => item.call_id === 'call_shell' && item.type.endsWith('_output'));
    assert.match(String(output.output), /Unknown tool "shell"/);
    const { existsSync } = await import('node:fs');
    assert.equal(existsSync(`${bob.workspaceRoot}/pwned`), false);
    assert.ok(hosted.logLines.some((line) => line.includes('no --sandbox-runner') && JSON.parse(line).level === 40), 'start-up warned');
  });

  it('logs the tenant id of every request and never a token', () => {
    const requestLines = hosted.logLines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request' && entry.route?.startsWith('/v1/sessions'));
    assert.ok(requestLines.length > 5);
    const tenantsSeen = new Set(requestLines.map((entry) => entry.tenant));
    assert.ok(tenantsSeen.has(alice.id) && tenantsSeen.has(bob.id));
    assert.ok(hosted.logLines.some((line) => line.includes('tenant runtime started') && line.includes(alice.id)));
    const everything = hosted.logLines.join('\n');
    for (const tenant of hosted.tenants) assert.ok(!everything.includes(tenant.token), 'no token in the logs');
    assert.ok(!everything.includes('private prompt of alice'), 'no prompt in the logs');
  });
});
