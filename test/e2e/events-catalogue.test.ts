import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Value } from 'typebox/value';
import { waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import type { EventRecorder, ReceivedEvent } from '../support/events.ts';
import { useFakeServer } from '../support/harness.ts';
import { makeRepository } from '../support/git.ts';
import { EVENT_CATALOGUE, EventEnvelope, ReplayReset, type EventType } from '../../src/api/events.ts';

function schemaErrors(event: ReceivedEvent): string[] {
  const schema = event.type === 'replay.reset' ? ReplayReset : EventEnvelope;
  if (Value.Check(schema, event.data)) return [];
  const branch = EVENT_CATALOGUE[event.type as EventType]?.data;
  const errors = branch ? [...Value.Errors(branch, event.data.data)] : [{ message: 'undeclared event type' }];
  return errors.map((error) => `${event.type}: ${JSON.stringify(error)} in ${JSON.stringify(event.data)}`);
}

/**
 * Every frame a real server sends, in as many situations as the fake provider can stage, matches
 * the catalogue's schema for its type: the declared payloads are the ones on the wire.
 */
describe('the event catalogue against the wire', () => {
  let fake!: FakeProvider;
  let server!: TestServer;
  let events!: EventRecorder;
  const harness = useFakeServer();
  before(() => ({ fake, server, events } = harness));

  const newSession = async (body: object = {}) => (await server.request('POST', '/v1/sessions', { body })).json;
  const submit = async (sessionId: string, input: string) => (await server.request('POST', `/v1/sessions/${sessionId}/turns`, { body: { input } })).json;

  it('sends only declared types, each with the payload its schema describes', async () => {
    const session = await newSession();
    writeFileSync(join(server.workspace, 'notes.txt'), 'a note\n');

    // a rate-limited attempt, then reasoning, text and a tool call, then the answer
    fake.enqueue(
      { kind: 'http-error', status: 429, headers: { 'retry-after': '0' }, body: { error: { message: 'slow down', type: 'rate_limit' } } },
      { kind: 'reply', reasoning: 'I should read the notes.', text: 'Reading. ', toolCalls: [{ name: 'read_file', arguments: '{"path":"notes.txt"}', callId: 'call_read' }] },
      { kind: 'reply', text: 'The note says hello.' },
    );
    await waitForTurn(server, (await submit(session.id, 'read the notes')).id);

    // a command that asks first: request.created, tool output, request.resolved
    fake.enqueue(
      { kind: 'reply', toolCalls: [{ name: 'shell', arguments: JSON.stringify({ command: ['sh', '-c', 'echo made > made.txt; echo done'] }), callId: 'call_touch' }] },
      { kind: 'reply', text: 'Made it.' },
    );
    const asking = await submit(session.id, 'make a file');
    const created = await events.waitForType('request.created', asking.id);
    await server.request('POST', `/v1/requests/${created.data.data.id}/resolve`, { body: { decision: 'allow_once' } });
    await waitForTurn(server, asking.id);

    // a context reset, a failed turn and a cancelled one
    await waitForTurn(server, (await submit(session.id, '/clear')).id);
    fake.enqueue({ kind: 'http-error', status: 400, body: { error: { message: 'bad request', type: 'invalid_request_error' } } });
    await waitForTurn(server, (await submit(session.id, 'fail please')).id);
    fake.enqueue({ kind: 'hang' });
    const hanging = await submit(session.id, 'wait forever');
    await events.waitForType('turn.started', hanging.id);
    await server.request('POST', `/v1/turns/${hanging.id}/cancel`);
    await events.waitForType('turn.cancelled', hanging.id);

    // a repository that is checked out, and one whose branch does not exist
    const repository = join(server.workspace, 'sources', 'catalogue');
    makeRepository(repository, { 'README.md': '# catalogue\n' });
    const checkedOut = await newSession({ repository: { url: repository } });
    const missing = await newSession({ repository: { url: repository, ref: 'no-such-branch' } });
    await events.waitFor((event) => event.type === 'session.setup.completed' && event.data.sessionId === checkedOut.id);
    await events.waitFor((event) => event.type === 'session.setup.failed' && event.data.sessionId === missing.id);

    const seen = new Set(events.events.map((event) => event.type));
    for (const type of ['provider.limit', 'response.attempt.failed', 'response.reasoning.delta', 'tool.started', 'tool.arguments.updated',
      'tool.updated', 'tool.output.updated', 'tool.finished', 'request.created', 'request.resolved', 'model.context.reset',
      'agent.turn.finished', 'turn.failed', 'turn.cancelled', 'session.setup.step', 'session.setup.completed', 'session.setup.failed']) {
      assert.ok(seen.has(type), `the scenario produced ${type}; got ${[...seen].join(', ')}`);
    }
    assert.deepEqual(events.events.flatMap(schemaErrors), []);
  });
});
