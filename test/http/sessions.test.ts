import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BACKENDS } from '../support/backends.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

for (const backend of BACKENDS) {
  describe(`sessions on ${backend}`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend });
    });
    after(async () => server.close());

    const create = (body: unknown = {}) => server.request('POST', '/v1/sessions', { body });

    it('creates a session with the catalog defaults in the first workspace root', async () => {
      const response = await create();
      assert.equal(response.status, 201);
      const session = response.json;
      assert.equal(session.cwd, server.workspace);
      assert.equal(session.model, 'test-model');
      assert.equal(session.transportModel, 'test-transport');
      assert.equal(session.provider, 'local');
      assert.equal(session.connection, 'local');
      assert.equal(session.dialect, 'openai-responses');
      assert.equal(session.effort, 'medium');
      assert.equal(session.titleIsManual, false);
      assert.equal(session.archived, false);
      assert.deepEqual(session.usage, { input: 0, output: 0, cached: 0 });
      assert.match(session.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      const fetched = await server.request('GET', `/v1/sessions/${session.id}`);
      assert.equal(fetched.status, 200);
      assert.deepEqual(fetched.json, session);
    });

    it('joins a relative cwd to the first root and canonicalises it', async () => {
      mkdirSync(join(server.workspace, 'project', 'src'), { recursive: true });
      const response = await create({ cwd: 'project/./src/..' });
      assert.equal(response.status, 201);
      assert.equal(response.json.cwd, join(server.workspace, 'project'));
    });

    it('refuses a cwd that does not exist or is a file (422 invalid_workspace)', async () => {
      const missing = await create({ cwd: 'nope' });
      assert.equal(missing.status, 422);
      assert.equal(missing.json.error.code, 'invalid_workspace');
    });

    it('refuses a cwd outside every root, and a symlink that leads out (403)', async () => {
      const outside = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-outside-')));
      const direct = await create({ cwd: outside });
      assert.equal(direct.status, 403);
      assert.equal(direct.json.error.code, 'workspace_not_allowed');
      symlinkSync(outside, join(server.workspace, 'escape'));
      const viaLink = await create({ cwd: 'escape' });
      assert.equal(viaLink.status, 403);
      assert.equal(viaLink.json.error.code, 'workspace_not_allowed');
      const dotdot = await create({ cwd: '../' });
      assert.equal(dotdot.status, 403);
    });

    it('validates model and effort against the catalog', async () => {
      const unknown = await create({ model: 'gpt-guess' });
      assert.equal(unknown.status, 422);
      assert.equal(unknown.json.error.code, 'model_not_available');
      const effort = await create({ model: 'plain-model', effort: 'high' });
      assert.equal(effort.status, 422);
      assert.equal(effort.json.error.code, 'invalid_effort');
      const supported = await create({ model: 'test-model', effort: 'low' });
      assert.equal(supported.json.effort, 'low');
      const plain = await create({ model: 'plain-model' });
      assert.equal(plain.json.effort, 'none');
      assert.equal(plain.json.transportModel, 'plain');
      const notAnEffort = await create({ effort: 'extreme' });
      assert.equal(notAnEffort.status, 400);
      assert.equal(notAnEffort.json.error.code, 'invalid_json');
    });

    it('keeps a manual title', async () => {
      const response = await create({ title: 'Refactor parser' });
      assert.equal(response.json.title, 'Refactor parser');
      assert.equal(response.json.titleIsManual, true);
    });

    it('rejects unknown properties with the offending path', async () => {
      const response = await create({ cwd: '.', colour: 'blue' });
      assert.equal(response.status, 400);
      assert.equal(response.json.error.code, 'invalid_json');
      assert.equal(response.json.error.details[0].path, '/colour');
    });

    it('refuses repository together with cwd', async () => {
      const response = await create({ cwd: '.', repository: { url: 'https://example.invalid/r.git' } });
      assert.equal(response.status, 422);
      assert.equal(response.json.error.code, 'repository_with_cwd');
    });

    it('patches exactly one field', async () => {
      const { json: session } = await create();
      const empty = await server.request('PATCH', `/v1/sessions/${session.id}`, { body: {} });
      assert.equal(empty.status, 400);
      assert.equal(empty.json.error.code, 'empty_patch');
      const both = await server.request('PATCH', `/v1/sessions/${session.id}`, { body: { title: 'x', archived: true } });
      assert.equal(both.status, 422);
      assert.equal(both.json.error.code, 'non_atomic_patch');
      const renamed = await server.request('PATCH', `/v1/sessions/${session.id}`, { body: { title: 'Renamed' } });
      assert.equal(renamed.status, 200);
      assert.equal(renamed.json.title, 'Renamed');
      assert.equal(renamed.json.titleIsManual, true);
      assert.ok(renamed.json.updatedAt >= session.updatedAt);
      const archived = await server.request('PATCH', `/v1/sessions/${session.id}`, { body: { archived: true } });
      assert.equal(archived.json.archived, true);
      assert.equal((await server.request('GET', `/v1/sessions/${session.id}`)).json.archived, true);
    });

    it('deletes a session, after which it is gone (404)', async () => {
      const { json: session } = await create();
      const deleted = await server.request('DELETE', `/v1/sessions/${session.id}`);
      assert.equal(deleted.status, 204);
      assert.equal(deleted.text, '');
      const again = await server.request('GET', `/v1/sessions/${session.id}`);
      assert.equal(again.status, 404);
      assert.equal(again.json.error.code, 'session_not_found');
      assert.equal((await server.request('DELETE', `/v1/sessions/${session.id}`)).status, 404);
      assert.equal((await server.request('PATCH', `/v1/sessions/${session.id}`, { body: { title: 'x' } })).status, 404);
    });

    it('answers 404 for malformed and unknown ids', async () => {
      for (const id of ['nope', '00000000-0000-7000-8000-000000000000', '%00']) {
        const response = await server.request('GET', `/v1/sessions/${id}`);
        assert.equal(response.status, 404);
        assert.equal(response.json.error.code, 'session_not_found');
      }
    });
  });

  describe(`session listing on ${backend}`, () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ backend });
    });
    after(async () => server.close());

    it('pages by keyset across concurrent inserts without loss or duplicates', async () => {
      const created: string[] = [];
      for (let index = 0; index < 7; index++) created.push((await server.request('POST', '/v1/sessions', { body: { title: `s${index}` } })).json.id);
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const path: string = `/v1/sessions?limit=3${cursor ? `&cursor=${cursor}` : ''}`;
        const page = await server.request('GET', path);
        assert.equal(page.status, 200);
        assert.ok(page.json.data.length <= 3);
        seen.push(...page.json.data.map((session: { id: string }) => session.id));
        cursor = page.json.nextCursor;
        // a session created mid-paging is newer than every cursor: it never shifts later pages
        if (pages++ === 0) await server.request('POST', '/v1/sessions', { body: { title: 'late' } });
      } while (cursor);
      assert.deepEqual(seen, [...created].reverse());
    });

    it('filters by archive and bounds limit', async () => {
      const { json: session } = await server.request('POST', '/v1/sessions', { body: { title: 'to archive' } });
      await server.request('PATCH', `/v1/sessions/${session.id}`, { body: { archived: true } });
      const active = await server.request('GET', '/v1/sessions?archive=active&limit=100');
      assert.ok(!active.json.data.some((entry: { id: string }) => entry.id === session.id));
      const archived = await server.request('GET', '/v1/sessions?archive=archived');
      assert.deepEqual(archived.json.data.map((entry: { id: string }) => entry.id), [session.id]);
      const all = await server.request('GET', '/v1/sessions?archive=all&limit=100');
      assert.ok(all.json.data.some((entry: { id: string }) => entry.id === session.id));
      assert.equal((await server.request('GET', '/v1/sessions?archive=deleted')).json.error.code, 'invalid_archive_filter');
      assert.equal((await server.request('GET', '/v1/sessions?limit=1')).json.data.length, 1);
      assert.equal((await server.request('GET', '/v1/sessions?limit=100')).status, 200);
      for (const bad of ['0', '101', 'ten', '-1', '1.5']) {
        const response = await server.request('GET', `/v1/sessions?limit=${bad}`);
        assert.equal(response.status, 400, bad);
        assert.equal(response.json.error.code, 'invalid_limit');
      }
      assert.equal((await server.request('GET', '/v1/sessions?cursor=garbage')).json.error.code, 'invalid_cursor');
    });

    it('defaults to 50 per page', async () => {
      for (let index = 0; index < 52; index++) await server.request('POST', '/v1/sessions', { body: {} });
      const page = await server.request('GET', '/v1/sessions');
      assert.equal(page.json.data.length, 50);
      assert.equal(typeof page.json.nextCursor, 'string');
    });
  });

  describe(`durability on ${backend}`, () => {
    it('keeps sessions across a restart', async () => {
      const first = await startTestServer({ backend });
      const { json: session } = await first.request('POST', '/v1/sessions', { body: { title: 'durable' } });
      await first.stop();
      const second = await startTestServer({ reuse: { backend: first.backend, workspace: first.workspace } });
      try {
        const fetched = await second.request('GET', `/v1/sessions/${session.id}`);
        assert.equal(fetched.status, 200);
        assert.deepEqual(fetched.json, session);
      } finally {
        await second.close();
      }
    });
  });
}
