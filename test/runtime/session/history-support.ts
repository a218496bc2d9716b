/** Shared set-up of the history, fork and compaction tests: a real server on a fake provider. */
import assert from 'node:assert/strict';
import type { BackendKind } from '../../support/backends.ts';
import { startTestServer, fakeProviderModels, waitForTurn, type TestServer } from '../../support/server.ts';
import { startFakeProvider, type FakeProvider } from '../../support/fake-provider.ts';
import type { HistoryEffect, HistoryEntry } from '../../../src/domain/history-entry.ts';
import { insertHistoryEntry } from '../../../src/store/history.ts';

export interface Harness {
  fake: FakeProvider;
  server: TestServer;
  newSession(body?: unknown): Promise<any>;
  /** submits a turn and waits until it is terminal; returns the final Turn */
  runTurn(sessionId: string, input: string): Promise<any>;
  page(sessionId: string, query?: string): Promise<any>;
  /** writes history rows straight into the store, for paging tests that need many turns */
  insertTurns(sessionId: string, from: number, count: number, effect?: (index: number) => HistoryEffect): Promise<void>;
  close(): Promise<void>;
}

export async function startHarness(backend: BackendKind, options: { contextWindow?: number | null } = {}): Promise<Harness> {
  const fake = await startFakeProvider();
  const server = await startTestServer({ backend, models: fakeProviderModels(fake.baseUrl, { contextWindow: options.contextWindow ?? null }) });
  return {
    fake,
    server,
    async newSession(body = {}) {
      const response = await server.request('POST', '/v1/sessions', { body });
      assert.equal(response.status, 201, response.text);
      return response.json;
    },
    async runTurn(sessionId, input) {
      const response = await server.request('POST', `/v1/sessions/${sessionId}/turns`, { body: { input } });
      assert.equal(response.status, 202, response.text);
      return waitForTurn(server, response.json.id);
    },
    async page(sessionId, query = '') {
      const response = await server.request('GET', `/v1/sessions/${sessionId}/history${query}`);
      assert.equal(response.status, 200, response.text);
      return response.json;
    },
    async insertTurns(sessionId, from, count, effect = () => 'append') {
      const db = server.server.store.db;
      await db.transaction().execute(async (trx) => {
        for (let index = from; index < from + count; index++) await insertHistoryEntry(trx, sessionId, storedTurn(index, effect(index)));
      });
    },
    async close() {
      await server.close();
      await fake.close();
    },
  };
}

export function storedTurn(index: number, effect: HistoryEffect = 'append'): HistoryEntry {
  const user = `question ${index}`;
  const answer = `answer ${index}`;
  return {
    index,
    turnId: null,
    at: new Date(Date.UTC(2026, 0, 1, 0, 0, index)).toISOString(),
    userText: user,
    assistantText: answer,
    error: null,
    responseId: `resp_${index}`,
    effect,
    items: [
      { type: 'message', role: 'user', content: [{ type: 'input_text', text: user }] },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: answer }] },
    ],
    displayItems: [],
    usage: { input: 10, output: 5, cached: 0 },
    providerTelemetry: [],
  };
}

/** The message texts of a Responses request's input, in order ("role: text"). */
export function messageTexts(requestBody: any): string[] {
  return (requestBody.input as any[])
    .filter((item) => item.type === 'message')
    .map((item) => `${item.role}: ${typeof item.content === 'string' ? item.content : item.content.map((part: any) => part.text ?? '').join('')}`);
}

/** The body of the newest model request the fake provider received. */
export function lastRequest(fake: FakeProvider): any {
  return fake.requests[fake.requests.length - 1].body;
}
