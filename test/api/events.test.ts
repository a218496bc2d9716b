import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Value } from 'typebox/value';
import { contractFromSchemas } from '../../src/api/contract.ts';
import { buildOpenApiDocument } from '../../src/api/openapi.ts';
import { EVENT_CATALOGUE, EVENT_TYPES, EventEnvelope, ReplayReset, type AgentdEvent, type EventData } from '../../src/api/events.ts';
import { REPLAY_RESET_FRAME } from '../../src/events/sse-frame.ts';
import { isValidEventType } from '../../src/events/sse-frame.ts';
import type { EventHub } from '../../src/runtime/event-hub.ts';

/** The event names of SPEC.md §6 and CONTRACT.md §13, §18 and §19, all of which the catalogue declares. */
/** The event names of SPEC.md §6 and CONTRACT.md §13, §19 and §20, all of which the catalogue declares. */
const SPECIFIED = [
  'turn.queued', 'turn.started', 'agent.turn.started', 'turn.completed', 'turn.failed', 'turn.cancelled',
  'response.text.delta', 'response.reasoning.delta', 'turn.activity', 'warning', 'provider.limit', 'response.restarted',
  'agent.turn.finished', 'tool.started', 'tool.updated', 'tool.arguments.updated', 'tool.output.updated', 'tool.finished',
  'tool.retracted', 'response.attempt.discarded', 'response.attempt.failed', 'model.context.reset', 'agent.started',
  'agent.output', 'agent.finished', 'request.created', 'request.resolved', 'session.setup.started',
  'session.setup.completed', 'session.setup.step', 'session.setup.failed',
  // CONTRACT.md §19
  'session.created', 'session.updated', 'session.deleted', 'turn.steered',
  // CONTRACT.md §18
  'turn.resumed',
  // CONTRACT.md §20
  'turn.reverted',
  // CONTRACT.md §22
  'turn.result',
];

async function openApi() {
  return buildOpenApiDocument('test', await contractFromSchemas()) as any;
}

describe('the event catalogue', () => {
  it('declares every event of the specification, each a name an SSE frame can carry', () => {
    assert.deepEqual([...SPECIFIED].sort(), [...EVENT_TYPES].sort());
    for (const type of EVENT_TYPES) assert.ok(isValidEventType(type), type);
  });

  it('describes each type as a branch of EventEnvelope in /openapi.json, payload inline, 17 paths and 17 named schemas, extensions marked', async () => {
    const document = await openApi();
    const operations = (path: string) => Object.values(document.paths[path]) as any[];
    const extensions = Object.keys(document.paths).filter((path) => operations(path).some((operation) => operation['x-agentd-extension'] === true));
    assert.deepEqual(extensions, ['/v1/turns/{id}/revert'], 'CONTRACT.md §20: the one extension path');
    assert.ok(operations('/v1/turns/{id}/revert').every((operation) => operation['x-agentd-extension'] === true));
    assert.equal(Object.keys(document.paths).length - extensions.length, 17);
    assert.equal(Object.keys(document.components.schemas).length, 17);
    const branches: any[] = document.components.schemas.EventEnvelope.anyOf;
    assert.deepEqual(branches.map((branch) => branch.properties.type.const), EVENT_TYPES);
    for (const branch of branches) {
      assert.deepEqual([...branch.required].sort(), ['at', 'data', 'id', 'sessionId', 'turnId', 'type']);
    }
    const dataOf = (type: string) => branches.find((branch) => branch.properties.type.const === type).properties.data;
    assert.deepEqual(dataOf('request.created'), { $ref: '#/components/schemas/HumanRequest' });
    assert.deepEqual(dataOf('agent.turn.finished').properties.completion, { $ref: '#/components/schemas/TurnCompletion' });
    assert.deepEqual(dataOf('tool.retracted').required, ['callId', 'displayOnly']);
    assert.equal(dataOf('tool.retracted').properties.displayOnly.const, true);

    const stream = document.paths['/v1/events'].get.responses['200'].content['text/event-stream'].schema;
    assert.deepEqual(stream.anyOf[0], { $ref: '#/components/schemas/EventEnvelope' }, 'each frame: an envelope');
    assert.deepEqual(stream.anyOf[1].properties.reason.const, 'event_gap', '… or the replay.reset data');
    await SwaggerParser.validate(structuredClone(document));
  });

  it('accepts what the server sends and refuses a payload of another type', () => {
    const envelope = { id: 7, turnId: null, sessionId: null, at: '2025-01-01T00:00:00.000Z' };
    const ok: AgentdEvent = { ...envelope, type: 'tool.retracted', data: { callId: 'call_1', displayOnly: true } };
    assert.ok(Value.Check(EventEnvelope, ok));
    assert.ok(!Value.Check(EventEnvelope, { ...envelope, type: 'tool.retracted', data: { text: 'x', truncated: false } }));
    assert.ok(!Value.Check(EventEnvelope, { ...envelope, type: 'no.such.event', data: {} }));
    assert.ok(!Value.Check(EventEnvelope, { ...envelope, type: 'turn.queued', data: { smuggled: true } }), 'empty means empty');
  });

  it('describes the replay.reset frame the log writes', () => {
    const data = JSON.parse(/^data: (.*)$/m.exec(REPLAY_RESET_FRAME)![1]);
    assert.ok(Value.Check(ReplayReset, data));
    assert.equal(/^event: (.*)$/m.exec(REPLAY_RESET_FRAME)![1], 'replay.reset');
  });

  it('gives every type a sentence for the docs table', () => {
    for (const type of EVENT_TYPES) assert.match(EVENT_CATALOGUE[type].sent, /^[a-z].*[^.]$/, type);
  });
});

/**
 * Compile-time proof, checked by `npm run typecheck` (never called): the hub takes declared types
 * with their payloads only. Each @ts-expect-error fails the typecheck if the call became legal.
 */
export function emitterRefusesUndeclaredEvents(hub: EventHub, data: EventData<'tool.finished'>): void {
  hub.emit('tool.finished', null, null, data);
  // @ts-expect-error an undeclared type
  hub.emit('tool.exploded', null, null, {});
  // @ts-expect-error the payload of another type
  hub.emit('tool.retracted', null, null, { text: 'x', truncated: false });
  // @ts-expect-error a field the type does not declare
  hub.emit('request.resolved', null, null, { requestId: 'r', prompt: 'secret' });
  // @ts-expect-error a missing field
  hub.emit('turn.failed', null, null, {});
  // @ts-expect-error emitText only for types whose data is a bounded text
  hub.emitText('tool.finished', null, null, 'x');
}
