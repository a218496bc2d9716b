/**
 * Attachments end to end (CONTRACT.md §14): the image reaches each dialect in its own image form
 * (the bytes the fake provider receives), files are written under the session's attachment
 * directory and named to the model, and every rule refuses at one past its edge with a 422
 * `invalid_attachment` naming the entry, while the edge itself is accepted.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomUUID } from 'node:crypto';
import { BACKENDS } from '../support/backends.ts';
import { waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider, FakeRequest } from '../support/fake-provider.ts';
import type { EventRecorder } from '../support/events.ts';
import { useFakeServer } from '../support/harness.ts';

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 73, 72, 68, 82]);
const SIGNED: Record<string, Buffer> = {
  'image/jpeg': Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2]),
  'image/png': PNG,
  'image/gif': Buffer.from('GIF89a\x01\x00', 'latin1'),
  'image/webp': Buffer.from('RIFF\x10\x00\x00\x00WEBPVP8 ', 'latin1'),
  'image/bmp': Buffer.from('BM\x36\x00', 'latin1'),
};
const MiB = 1024 * 1024;
const b64 = (bytes: Buffer | string) => Buffer.from(bytes).toString('base64');
const file = (name: string, content: Buffer | string = 'hello') => ({ name, mimeType: 'text/plain', data: b64(content) });
const MODELS = { 'fake-responses': 'openai-responses', 'fake-anthropic': 'anthropic-messages', 'fake-chat': 'openai-chat' } as const;

/** The image of the request's user message as that dialect sends it: [mime type, base64]. */
function imageSent(request: FakeRequest): [string, string] | null {
  const messages: any[] = request.body.input ?? request.body.messages;
  for (const part of messages.find((message) => message.role === 'user').content) {
    if (part.type === 'input_image') return dataUrl(part.image_url);
    if (part.type === 'image') return [part.source.media_type, part.source.data];
    if (part.type === 'image_url') return dataUrl(part.image_url.url);
  }
  return null;
}
function dataUrl(url: string): [string, string] {
  const match = /^data:([^;]+);base64,(.*)$/s.exec(url);
  assert.ok(match, url.slice(0, 40));
  return [match[1]!, match[2]!];
}
function userTextSent(request: FakeRequest): string {
  const messages: any[] = request.body.input ?? request.body.messages;
  const content = messages.find((message) => message.role === 'user').content;
  return typeof content === 'string' ? content : content.map((part: any) => part.text ?? '').join('\n');
}

for (const backend of BACKENDS) {
  describe(`attachments on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    let events!: EventRecorder;
    const harness = useFakeServer({ backend, captureLogs: true });
    before(() => ({ fake, server, events } = harness));
    const submit = (sessionId: string, body: unknown) => server.request('POST', `/v1/sessions/${sessionId}/turns`, { body });

    for (const [model, dialect] of Object.entries(MODELS)) {
      it(`${dialect}: the image arrives in the dialect's image form and the files are written and named`, async () => {
        const session = await harness.newSession({ model });
        const marker = `ATTACH-${backend}-${dialect}`;
        fake.route(marker, { kind: 'hang' });
        const notes = Buffer.from(`notes for ${dialect}\n`);
        const turn = (await submit(session.id, { input: marker, images: [{ mimeType: 'image/png', data: b64(PNG) }], files: [file('notes.txt', notes), file('data.bin', Buffer.from([0, 1, 2, 255]))] })).json;
        await fake.waitForRequests(1);
        await events.waitForType('agent.turn.started', turn.id);
        const request = await waitForRequest(fake, marker);
        assert.deepEqual(imageSent(request), ['image/png', b64(PNG)], 'the exact bytes reach the model');
        const text = userTextSent(request);
        const paths = [...text.matchAll(/at (\S+)\]/g)].map((match) => match[1]!);
        assert.equal(paths.length, 2, text);
        assert.ok(paths[0]!.startsWith(`${server.workspace}/.agentd/attachments/${turn.id}/`), paths[0]);
        assert.deepEqual(readFileSync(paths[0]!), notes);
        assert.deepEqual(readFileSync(paths[1]!), Buffer.from([0, 1, 2, 255]));
        assert.equal((await server.request('POST', `/v1/turns/${turn.id}/cancel`)).json.status, 'cancelled');
        assert.equal(existsSync(dirname(paths[0]!)), false, 'the turn\'s attachment directory is removed when it ends');
        assert.ok(!JSON.stringify(events.ofTurn(turn.id)).includes(b64(PNG)), 'no image bytes in any event');
        assert.ok(!server.logs().join('\n').includes(b64(PNG)), 'no image bytes in the logs');
        assert.ok(!server.logs().join('\n').includes(b64(notes)), 'no file bytes in the logs');
      });
    }

    it('the history shows that an image was there, not its base64', async () => {
      const session = await harness.newSession();
      const big = Buffer.concat([PNG, Buffer.alloc(300_000, 7)]);
      fake.route('PICTURE', { kind: 'reply', text: 'a fine picture' });
      const turn = (await submit(session.id, { input: 'PICTURE look', images: [{ mimeType: 'image/png', data: b64(big) }] })).json;
      assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
      const entry = (await server.request('GET', `/v1/sessions/${session.id}/history`)).json.data[0].turn;
      const image = entry.items[0].content.find((part: any) => part.type === 'input_image');
      assert.equal(image.image_url, `<inline image image/png, ${big.length} bytes>`);
      assert.equal(entry.projectionTruncated, undefined, 'the image does not spend the text budget');
      assert.equal(entry.assistantText, 'a fine picture');
      // the model still gets the image on the next turn
      fake.route('PICTURE', { kind: 'reply', text: 'still there' });
      const next = (await submit(session.id, { input: 'again' })).json;
      assert.equal((await waitForTurn(server, next.id)).status, 'completed');
      assert.deepEqual(imageSent(fake.requests.at(-1)!), ['image/png', b64(big)]);
    });

    it('each image type is accepted with its signature and refused without it', async () => {
      for (const [mimeType, bytes] of Object.entries(SIGNED)) {
        const session = await harness.newSession();
        const accepted = await submit(session.id, { input: 'look', images: [{ mimeType, data: b64(bytes) }] });
        assert.equal(accepted.status, 202, mimeType);
        await waitForTurn(server, accepted.json.id);
        const forged = Buffer.from(bytes);
        forged[mimeType === 'image/webp' ? 9 : 1] ^= 0xff;
        const refused = await submit(session.id, { input: 'look', images: [{ mimeType, data: b64(forged) }] });
        assert.equal(refused.status, 422, mimeType);
        assert.equal(refused.json.error.code, 'invalid_attachment');
        assert.deepEqual(refused.json.error.details, { entry: 'images[0]' });
        const swapped = await submit(session.id, { input: 'look', images: [{ mimeType: mimeType === 'image/png' ? 'image/gif' : 'image/png', data: b64(bytes) }] });
        assert.equal(swapped.status, 422, `${mimeType} bytes under another type`);
      }
    });

    it('every limit at its edge is accepted and one past it is a 422 naming the entry', async () => {
      const image = { mimeType: 'image/png', data: b64(PNG) };
      const refusedAs = async (body: unknown, entry: string) => {
        const session = await harness.newSession();
        const response = await submit(session.id, body);
        assert.equal(response.status, 422, JSON.stringify(body).slice(0, 80));
        assert.equal(response.json.error.code, 'invalid_attachment');
        assert.deepEqual(response.json.error.details, { entry });
        assert.deepEqual((await server.request('GET', `/v1/turns?sessionId=${session.id}`)).json.data, [], 'no turn was recorded');
      };
      const accepted = async (body: unknown) => {
        const session = await harness.newSession();
        const response = await submit(session.id, body);
        assert.equal(response.status, 202, response.text.slice(0, 200));
        assert.equal((await waitForTurn(server, response.json.id, 30_000)).status, 'completed');
      };
      await accepted({ input: 'one image', images: [image] });
      await refusedAs({ input: 'two images', images: [image, image] }, 'images[1]');
      await accepted({ input: 'five', images: [image], files: [1, 2, 3, 4].map((n) => file(`f${n}.txt`)) });
      await refusedAs({ input: 'six', images: [image], files: [1, 2, 3, 4, 5].map((n) => file(`f${n}.txt`)) }, 'files[4]');
      await refusedAs({ input: 'six files', files: [1, 2, 3, 4, 5, 6].map((n) => file(`f${n}.txt`)) }, 'files[5]');
      const half = Buffer.alloc(10 * MiB - PNG.length, 1);
      await accepted({ input: 'exactly 20 MiB', images: [{ mimeType: 'image/png', data: b64(Buffer.concat([PNG, half])) }], files: [file('big.bin', Buffer.alloc(10 * MiB, 2))] });
      await refusedAs({ input: 'one byte more', images: [{ mimeType: 'image/png', data: b64(Buffer.concat([PNG, half])) }], files: [file('big.bin', Buffer.alloc(10 * MiB + 1, 2))] }, 'files[0]');
      await accepted({ input: 'empty file', files: [file('empty.txt', '')] });
      for (const data of ['abc', 'ab!=', 'YWJj=', '====', 'YW Jj']) await refusedAs({ input: 'bad', files: [{ name: 'x.txt', mimeType: 'text/plain', data }] }, 'files[0]');
      await refusedAs({ input: 'bad', images: [{ mimeType: 'image/png', data: 'not base64!' }] }, 'images[0]');
      for (const name of ['a/b.txt', '..', '.', 'x\u0000y', '/etc/passwd', '../escape']) await refusedAs({ input: 'name', files: [file('ok.txt'), file(name)] }, 'files[1]');
      await accepted({ input: 'plain names', files: [file('read me.txt'), file('..hidden'), file('ünïcode.md')] });
    });

    it('attachments count in the idempotency digest', async () => {
      const session = await harness.newSession();
      const clientRequestId = randomUUID();
      const body = { input: 'same', clientRequestId, files: [file('a.txt', 'one')] };
      const first = await submit(session.id, body);
      assert.equal(first.status, 202);
      const replay = await submit(session.id, body);
      assert.equal(replay.json.id, first.json.id);
      const changed = await submit(session.id, { ...body, files: [file('a.txt', 'two')] });
      assert.equal(changed.status, 409);
      assert.equal(changed.json.error.code, 'idempotency_conflict');
      const withImage = await submit(session.id, { ...body, images: [{ mimeType: 'image/png', data: b64(PNG) }] });
      assert.equal(withImage.json.error.code, 'idempotency_conflict');
      await waitForTurn(server, first.json.id);
    });
  });
}

async function waitForRequest(fake: FakeProvider, marker: string): Promise<FakeRequest> {
  for (let waited = 0; waited < 10_000; waited += 10) {
    const found = fake.requests.find((request) => request.dialect && userTextSent(request).includes(marker));
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`no request with ${marker}`);
}
