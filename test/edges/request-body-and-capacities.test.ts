/**
 * SPEC.md §8's request-body limit and start-up capacities at their edges: `--maximum-request-bytes`
 * counted in bytes of the encoded body (multi-byte text, with and without Content-Length), and
 * every capacity option at 1 and 0, written in the spellings an integer parser might let through,
 * with each per-tenant value equal to its global one and one past it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/config.ts';
import { UsageError } from '../../src/config/flags.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const LIMIT = 2048;

/** A JSON body of exactly `bytes` bytes whose title is made of `unit` (1 to 4 bytes each) and ASCII filler. */
function bodyOfBytes(bytes: number, unit: string): string {
  const skeleton = Buffer.byteLength(JSON.stringify({ title: '' }));
  const room = bytes - skeleton;
  const units = Math.floor(room / Buffer.byteLength(unit));
  const text = unit.repeat(units) + 'a'.repeat(room - units * Buffer.byteLength(unit));
  const body = JSON.stringify({ title: text });
  assert.equal(Buffer.byteLength(body), bytes);
  return body;
}

/** Sends `body` chunked (no Content-Length) in pieces of 100 bytes; the status, or 'closed' if the server hung up first. */
function sendChunked(port: number, body: string): Promise<number | 'closed'> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/v1/sessions', method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve('closed'));
    const bytes = Buffer.from(body);
    for (let offset = 0; offset < bytes.length; offset += 100) req.write(bytes.subarray(offset, offset + 100));
    req.end();
  });
}

describe('--maximum-request-bytes at its edge, in bytes', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ args: ['--maximum-request-bytes', String(LIMIT)] });
  });
  after(() => server.close());

  for (const unit of ['a', 'é', '€', '😀']) {
    it(`reads a body of exactly ${LIMIT} bytes of ${JSON.stringify(unit)} and refuses ${LIMIT + 1}`, async () => {
      const headers = { 'content-type': 'application/json' };
      const atLimit = await server.request('POST', '/v1/sessions', { rawBody: bodyOfBytes(LIMIT, unit), headers });
      // read, then judged by the title rule: over 512 characters is refused, 509 emoji are a title
      assert.equal(atLimit.status, unit === '😀' ? 201 : 400, atLimit.text);
      if (unit !== '😀') assert.equal(atLimit.json.error.code, 'invalid_json');
      const past = await server.request('POST', '/v1/sessions', { rawBody: bodyOfBytes(LIMIT + 1, unit), headers });
      assert.equal(past.status, 413);
      assert.equal(past.json.error.code, 'request_too_large');
    });
  }

  it('counts a chunked body as it streams: the limit is read, one byte more is refused', async () => {
    assert.equal(await sendChunked(server.server.port, bodyOfBytes(LIMIT, 'é')), 400);
    const past = await sendChunked(server.server.port, bodyOfBytes(LIMIT + 1, 'é'));
    assert.ok(past === 413 || past === 'closed', `one byte past the limit: ${past}`);
    const small = await server.request('POST', '/v1/sessions', { body: { title: 'é'.repeat(100) } });
    assert.equal(small.status, 201, 'the server still answers');
  });
});

describe('start-up capacities at their edges (SPEC.md §8: positive; per tenant at most the global)', () => {
  const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-capacities-')));
  const configOf = (args: string[]) => loadConfig(['--state-dir', join(cwd, 'state'), ...args], {}, cwd);
  const refuses = async (args: string[], message: RegExp) => {
    await assert.rejects(configOf(args), (error: Error) => error instanceof UsageError && message.test(error.message), args.join(' '));
  };
  const CAPACITIES = [
    ['max-concurrent-turns', 'maxConcurrentTurns'],
    ['max-concurrent-turns-per-tenant', 'maxConcurrentTurnsPerTenant'],
    ['max-queued-turns', 'maxQueuedTurns'],
    ['max-queued-turns-per-tenant', 'maxQueuedTurnsPerTenant'],
    ['max-active-tenants', 'maxActiveTenants'],
    ['max-event-subscribers', 'maxEventSubscribers'],
    ['max-event-subscribers-per-tenant', 'maxEventSubscribersPerTenant'],
    ['event-replay-limit', 'eventReplayLimit'],
    ['maximum-request-bytes', 'maximumRequestBytes'],
  ] as const;

  for (const [flag, field] of CAPACITIES) {
    it(`--${flag}: 1 is accepted; 0, -1 and non-decimal spellings are refused`, async () => {
      const limits = (await configOf([`--${flag}`, '1'])).limits as unknown as Record<string, number>;
      assert.equal(limits[field], 1);
      for (const zero of ['0', '-0', '00']) await refuses([`--${flag}`, zero], new RegExp(`^--${flag}: must be at least 1$`));
      await refuses([`--${flag}`, '-1'], new RegExp(`^--${flag}: must be at least 1$`));
      for (const spelling of ['1.5', '1e3', '0x10', '+1', ' 1', '1 ', '', 'one']) await refuses([`--${flag}`, spelling], new RegExp(`^--${flag}: expected an integer`));
    });
  }

  for (const [perTenant, global, field] of [
    ['max-concurrent-turns-per-tenant', 'max-concurrent-turns', 'maxConcurrentTurnsPerTenant'],
    ['max-queued-turns-per-tenant', 'max-queued-turns', 'maxQueuedTurnsPerTenant'],
    ['max-event-subscribers-per-tenant', 'max-event-subscribers', 'maxEventSubscribersPerTenant'],
  ] as const) {
    it(`--${perTenant} equal to --${global} is accepted, one more is refused, and its default is capped by it`, async () => {
      const equal = (await configOf([`--${global}`, '7', `--${perTenant}`, '7'])).limits as unknown as Record<string, number>;
      assert.equal(equal[field], 7);
      await refuses([`--${global}`, '7', `--${perTenant}`, '8'], new RegExp(`^--${perTenant}: 8 exceeds --${global} \\(7\\)$`));
      const capped = (await configOf([`--${global}`, '1'])).limits as unknown as Record<string, number>;
      assert.equal(capped[field], 1, 'a default above a small global value becomes the global value');
    });
  }

  it('measures a per-tenant value against the global default when only it is given', async () => {
    assert.equal(((await configOf(['--max-concurrent-turns-per-tenant', '3'])).limits as unknown as Record<string, number>).maxConcurrentTurnsPerTenant, 3);
    await refuses(['--max-concurrent-turns-per-tenant', '4'], /^--max-concurrent-turns-per-tenant: 4 exceeds --max-concurrent-turns \(3\)$/);
    await refuses(['--max-queued-turns-per-tenant', '101'], /exceeds --max-queued-turns \(100\)/);
    await refuses(['--max-event-subscribers-per-tenant', '257'], /exceeds --max-event-subscribers \(256\)/);
  });
});
