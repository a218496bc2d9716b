import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../support/backends.ts';
import { waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import { useServerOnFakeProvider } from '../support/harness.ts';

/*
 * GET /v1/sessions/:id and GET /v1/sessions answer from a cache of response bodies
 * (runtime/session/session-read-cache.ts). Each test first reads what it will change twice (so the
 * answer is cached), then writes, then reads again: a cache that a write forgot would answer the
 * old body.
 */
for (const backend of BACKENDS) {
  describe(`cached session reads on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    const started = useServerOnFakeProvider({ backend });
    before(() => ({ fake, server } = started));

    const create = async (body: unknown = {}) => (await server.request('POST', '/v1/sessions', { body })).json;
    const getOne = async (id: string) => server.request('GET', `/v1/sessions/${id}`);
    const page = async (query = '') => (await server.request('GET', `/v1/sessions?limit=50${query}`)).json;
    const idsOf = (listed: { data: { id: string }[] }) => listed.data.map((session) => session.id);
    /** reads the session and the first pages twice, so that all of them are answered from the cache */
    const readTwice = async (id: string) => {
      for (let round = 0; round < 2; round++) {
        assert.equal((await getOne(id)).status, 200);
        await page();
        await page('&archive=archived');
      }
    };
    const runTurn = async (sessionId: string, input: string) => {
      const response = await server.request('POST', `/v1/sessions/${sessionId}/turns`, { body: { input } });
      assert.equal(response.status, 202);
      return waitForTurn(server, response.json.id);
    };

    it('answers a repeated read with the same body and content type', async () => {
      const session = await create({ title: 'steady' });
      const first = await getOne(session.id);
      const second = await getOne(session.id);
      assert.deepEqual(second.json, session);
      assert.equal(second.text, first.text);
      assert.match(String(second.headers['content-type']), /^application\/json; charset=utf-8$/);
      const listed = await server.request('GET', '/v1/sessions?limit=50');
      assert.match(String(listed.headers['content-type']), /^application\/json/);
    });

    it('a new session appears in a cached page', async () => {
      const first = await create();
      await readTwice(first.id);
      const second = await create();
      assert.equal(idsOf(await page())[0], second.id);
    });

    it('PATCH title: the session and the page show the new title and updatedAt', async () => {
      const session = await create();
      await readTwice(session.id);
      const patched = (await server.request('PATCH', `/v1/sessions/${session.id}`, { body: { title: 'renamed' } })).json;
      const read = (await getOne(session.id)).json;
      assert.equal(read.title, 'renamed');
      assert.equal(read.titleIsManual, true);
      assert.equal(read.updatedAt, patched.updatedAt);
      const listed = (await page()).data.find((entry: { id: string }) => entry.id === session.id);
      assert.equal(listed.title, 'renamed');
    });

    it('PATCH archived: the session leaves the active page for the archived one, and back', async () => {
      const session = await create();
      await readTwice(session.id);
      assert.equal((await server.request('PATCH', `/v1/sessions/${session.id}`, { body: { archived: true } })).status, 200);
      assert.equal((await getOne(session.id)).json.archived, true);
      assert.ok(!idsOf(await page()).includes(session.id));
      assert.ok(idsOf(await page('&archive=archived')).includes(session.id));
      await readTwice(session.id);
      assert.equal((await server.request('PATCH', `/v1/sessions/${session.id}`, { body: { archived: false } })).status, 200);
      assert.ok(idsOf(await page()).includes(session.id));
      assert.ok(!idsOf(await page('&archive=archived')).includes(session.id));
    });

    it('DELETE: the session is gone from its read and from the page', async () => {
      const session = await create();
      await readTwice(session.id);
      assert.equal((await server.request('DELETE', `/v1/sessions/${session.id}`)).status, 204);
      const read = await getOne(session.id);
      assert.equal(read.status, 404);
      assert.equal(read.json.error.code, 'session_not_found');
      assert.ok(!idsOf(await page()).includes(session.id));
    });

    it('a finished turn: usage, updatedAt and the derived title show, and the session moves to the top', async () => {
      const session = await create();
      const other = await create();
      await readTwice(session.id);
      assert.equal(idsOf(await page())[0], other.id);
      fake.enqueue({ kind: 'reply', text: 'done', usage: { input: 11, output: 7, cached: 3 } });
      assert.equal((await runTurn(session.id, 'Summarise the plan')).status, 'completed');
      const read = (await getOne(session.id)).json;
      assert.deepEqual(read.usage, { input: 11, output: 7, cached: 3 });
      assert.equal(read.title, 'Summarise the plan');
      assert.ok(read.updatedAt > session.updatedAt);
      const listed = await page();
      assert.equal(listed.data[0].id, session.id);
      assert.deepEqual(listed.data[0].usage, { input: 11, output: 7, cached: 3 });
    });

    it('a failed turn still shows the usage of its completed steps', async () => {
      const session = await create();
      await readTwice(session.id);
      fake.enqueue(
        { kind: 'reply', toolCalls: [{ name: 'list_dir', arguments: '{}' }], usage: { input: 5, output: 2, cached: 0 } },
        { kind: 'mid-stream-error', code: 'invalid_prompt', message: 'bad prompt' } as never,
      );
      assert.equal((await runTurn(session.id, 'look around')).status, 'failed');
      assert.deepEqual((await getOne(session.id)).json.usage, { input: 5, output: 2, cached: 0 });
    });

    it('fork: the child appears in a cached page at once', async () => {
      const parent = await create();
      fake.enqueue({ kind: 'reply', text: 'hello' });
      await runTurn(parent.id, 'hi');
      await readTwice(parent.id);
      const child = (await server.request('POST', `/v1/sessions/${parent.id}/fork`, { body: {} })).json;
      assert.equal(idsOf(await page())[0], child.id);
      assert.equal((await getOne(child.id)).json.id, child.id);
    });

    it('a read of a session that does not exist yet is not remembered as missing', async () => {
      const missing = '01900000-0000-7000-8000-000000000000';
      assert.equal((await getOne(missing)).status, 404);
      assert.equal((await getOne(missing)).status, 404);
      assert.equal((await getOne('not-a-uuid')).status, 404);
      const bad = await server.request('GET', '/v1/sessions?cursor=garbage');
      assert.equal(bad.status, 400);
    });
  });
}
