import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { SERVE_FLAGS } from '../../src/config/flags.ts';
import { registryFixture } from '../tenancy/registry-fixture.ts';
import { http } from '../support/http.ts';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { EventSource } from 'eventsource';

/** A failed assertion must not leave its server running: the test runner would wait for it. */
function killWhenDone(t: TestContext, child: ChildProcess): void {
  t.after(() => void (child.exitCode === null && child.signalCode === null && child.kill('SIGKILL')));
}

const BIN = new URL('../../bin/agentd.js', import.meta.url).pathname;
const TOKEN = 't'.repeat(32);

function agentd(args: string[], env: NodeJS.ProcessEnv = {}) {
  const result = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env }, timeout: 30000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr.trim() };
}

function scratch(): string {
  return mkdtempSync(join(tmpdir(), 'agentd-cli-'));
}

describe('agentd command line', () => {
  it('lists every option in serve --help and the commands in --help', () => {
    const help = agentd(['serve', '--help']);
    assert.equal(help.status, 0);
    for (const flag of SERVE_FLAGS) assert.ok(help.stdout.includes(`--${flag.name}`), flag.name);
    // every option line keeps at least two spaces between the option and its help, in one column
    const optionLines = help.stdout.split('\n').filter((line) => line.startsWith('  --'));
    assert.equal(optionLines.length, SERVE_FLAGS.length);
    const helpColumn = (line: string) => line.match(/^ {2}--[a-z-]+(?: <value>)? {2,}(?=\S)/)?.[0].length;
    for (const line of optionLines) assert.ok(helpColumn(line), `no gap between option and help: ${line}`);
    assert.equal(new Set(optionLines.map(helpColumn)).size, 1, 'the help texts start in one column');
    const top = agentd(['--help']);
    assert.equal(top.status, 0);
    assert.match(top.stdout, /serve/);
  });

  const refusals: [string, string[], NodeJS.ProcessEnv, RegExp][] = [
    ['port past the range', ['--port', '65536'], {}, /^agentd: --port: must be between 0 and 65535$/],
    ['negative port', ['--port', '-1'], {}, /--port/],
    ['non-integer port', ['--port', 'http'], {}, /--port: expected an integer/],
    ['zero capacity', ['--max-concurrent-turns', '0'], {}, /--max-concurrent-turns: must be at least 1/],
    ['per-tenant above global', ['--max-queued-turns', '10', '--max-queued-turns-per-tenant', '11'], {}, /--max-queued-turns-per-tenant: 11 exceeds --max-queued-turns \(10\)/],
    ['subscribers per tenant above global', ['--max-event-subscribers', '4', '--max-event-subscribers-per-tenant', '5'], {}, /--max-event-subscribers-per-tenant: 5 exceeds --max-event-subscribers \(4\)/],
    ['remote host without --allow-remote', ['--host', '0.0.0.0'], {}, /--host: 0.0.0.0 is not a loopback address/],
    ['remote host without a token', ['--host', '0.0.0.0', '--allow-remote'], {}, /--allow-remote: a non-loopback bind requires a token/],
    ['short token', [], { SERVICE_TOKEN: 'short' }, /SERVICE_TOKEN: the token must be at least 32 bytes/],
    ['registry-only option', ['--tenant-state-root', '/srv/agentd'], {}, /--tenant-state-root: only valid with --tenant-registry/],
    ['unknown option', ['--colour', 'blue'], {}, /--colour: unknown option/],
    ['a registry without a database', ['--tenant-registry', '/etc/agentd/tenants.json'], {}, /--tenant-registry: requires --database-url/],
    ['a registry file that does not exist', ['--tenant-registry', '/etc/agentd/none.json', '--database-url', 'postgres://x@127.0.0.1/db'], {}, /^agentd: --tenant-registry \/etc\/agentd\/none.json: \/etc\/agentd\/none.json does not exist$/],
    ['a registry with --workspace-root', ['--tenant-registry', '/etc/t.json', '--database-url', 'postgres://x@127.0.0.1/db', '--workspace-root', '/srv'], {}, /--workspace-root: cannot be combined with --tenant-registry/],
    ['a registry with --token-file', ['--tenant-registry', '/etc/t.json', '--database-url', 'postgres://x@127.0.0.1/db', '--token-file', '/etc/token'], {}, /cannot be combined with a tenant registry/],
    ['a registry with a single-user token', ['--tenant-registry', '/etc/t.json', '--database-url', 'postgres://x@127.0.0.1/db'], { SERVICE_TOKEN: 'k'.repeat(32) }, /cannot be combined with a tenant registry/],
    ['missing value', ['--port'], {}, /--port: missing value/],
    ['bad database url', ['--database-url', 'mysql://x'], {}, /--database-url/],
    ['bad log level', ['--log-level', 'loud'], {}, /--log-level/],
    ['bad cors origin', ['--cors-origin', 'app.example.com'], {}, /--cors-origin/],
  ];
  for (const [name, args, env, message] of refusals) {
    it(`refuses ${name} with exit status 2 before binding`, () => {
      const result = agentd(['serve', '--state-dir', scratch(), ...args], env);
      assert.equal(result.status, 2);
      assert.match(result.stderr, message);
      assert.equal(result.stderr.split('\n').length, 1);
    });
  }

  it('accepts the edges of the port range', () => {
    // 65535 passes validation; binding may still fail if taken, which is not exit status 2.
    const result = agentd(['serve', '--port', '65535', '--state-dir', scratch(), '--host', '::2'], {});
    assert.equal(result.status, 2);
    assert.match(result.stderr, /--host/);
  });

  it('enforces the token file rules', () => {
    const dir = scratch();
    const file = join(dir, 'token');
    writeFileSync(file, TOKEN + '\n', { mode: 0o600 });
    chmodSync(file, 0o640);
    assert.match(agentd(['serve', '--token-file', file, '--state-dir', dir]).stderr, /--token-file: .* must not be readable or writable by group or others/);
    const link = join(dir, 'link');
    chmodSync(file, 0o600);
    symlinkSync(file, link);
    assert.match(agentd(['serve', '--token-file', link, '--state-dir', dir]).stderr, /--token-file: .* is a symlink/);
    assert.match(agentd(['serve', '--token-file', dir, '--state-dir', dir]).stderr, /is not a regular file/);
    assert.match(agentd(['serve', '--token-file', join(dir, 'none'), '--state-dir', dir]).stderr, /does not exist/);
    const both = agentd(['serve', '--token-file', file, '--state-dir', dir], { SERVICE_TOKEN: TOKEN });
    assert.equal(both.status, 2);
    assert.match(both.stderr, /exactly one token source/);
    const short = join(dir, 'short');
    writeFileSync(short, 's'.repeat(31), { mode: 0o600 });
    assert.match(agentd(['serve', '--token-file', short, '--state-dir', dir]).stderr, /at least 32 bytes/);
  });

  it('checks the tenant registry whole before binding, then provisions through --database-url', () => {
    const fixture = registryFixture();
    const document = fixture.document(2);
    fixture.write(document);
    const serve = ['serve', '--tenant-registry', fixture.registryPath, '--database-url', 'postgres://x@127.0.0.1:1/db', '--state-dir', fixture.stateDir];
    chmodSync(document.tenants[1].credentials[0].tokenFile, 0o644);
    const broken = agentd(serve);
    assert.equal(broken.status, 2);
    assert.equal(broken.stderr, `agentd: --tenant-registry ${fixture.registryPath}: tenants[1].credentials[0].tokenFile: mode 0644, must be 0600`);
    chmodSync(document.tenants[1].credentials[0].tokenFile, 0o600);
    // valid: start-up goes on to provisioning, which cannot reach this database
    const valid = agentd([...serve, '--tenant-state-root', join(fixture.dir, 'tenant-state')]);
    assert.equal(valid.status, 1);
    assert.match(valid.stderr, /^agentd: .*ECONNREFUSED/);
    for (const tenant of document.tenants) assert.ok(!valid.stderr.includes(readFileSync(tenant.credentials[0].tokenFile, 'utf8').trim()));
  });

  it('stops start-up on a broken models file, naming the file and the field', () => {
    const dir = scratch();
    const file = join(dir, 'models.json');
    writeFileSync(file, JSON.stringify({ connections: [{ id: 'c', provider: 'p', dialect: 'telepathy', baseUrl: 'http://127.0.0.1:1' }], models: [] }));
    const result = agentd(['serve', '--models-file', file, '--state-dir', dir]);
    assert.equal(result.status, 2);
    assert.ok(result.stderr.includes(file));
    assert.match(result.stderr, /connections\[0\]\.dialect/);
    writeFileSync(file, '{"models": [{"id": "m", "connection": "missing", "transportModel": "x"}]}');
    assert.match(agentd(['serve', '--models-file', file, '--state-dir', dir]).stderr, /models\[0\]\.connection: no connection with id "missing"/);
    writeFileSync(file, '{not json');
    assert.match(agentd(['serve', '--models-file', file, '--state-dir', dir]).stderr, /not valid JSON/);
  });

  it('serves until SIGTERM, finishing in-flight requests, then exits 0', async (t) => {
    const dir = scratch();
    const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--state-dir', dir, '--workspace-root', dir], { env: { PATH: process.env.PATH, HOME: process.env.HOME, SERVICE_TOKEN: TOKEN } });
    killWhenDone(t, child);
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    while (!/listening on (http:\/\/\S+)/.test(output)) await once(child.stdout, 'data');
    const url = output.match(/listening on (http:\/\/\S+)/)![1];
    assert.ok(!output.includes(TOKEN), 'the token never reaches the logs');
    const health = await http('GET', `${url}/healthz`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(health.status, 200);
    // the built server reads its contract from dist/api/contract.json: it validates and describes alike
    const description = await http('GET', `${url}/openapi.json`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(Object.keys(description.json.paths).length, 20, 'the 17 of SPEC.md, the revert path (CONTRACT.md §20), /acp and /mcp (§22)');
    const unknownField = await http('POST', `${url}/v1/sessions`, { headers: { authorization: `Bearer ${TOKEN}` }, body: { colour: 'blue' } });
    assert.equal(unknownField.status, 400);
    assert.equal(unknownField.json.error.details[0].path, '/colour');
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
    assert.ok(!output.includes(TOKEN));
  });

  it('on SIGINT finishes a request already in flight, then stops accepting and exits 0', async (t) => {
    const dir = scratch();
    const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--state-dir', dir, '--workspace-root', dir], { env: { PATH: process.env.PATH, HOME: process.env.HOME } });
    killWhenDone(t, child);
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    while (!/listening on (http:\/\/\S+)/.test(output)) await once(child.stdout, 'data');
    const url = new URL(output.match(/listening on (http:\/\/\S+)/)![1]);
    // a request whose body is still arriving when the signal comes
    const response = new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: url.hostname, port: url.port, path: '/v1/sessions', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': '2' } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.write('{');
      setTimeout(() => {
        child.kill('SIGINT');
        setTimeout(() => req.end('}'), 300);
      }, 100);
    });
    // 503 model_catalog_empty: no model is configured, but the request was read and answered
    assert.equal(await response, 503);
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
    await assert.rejects(http('GET', `${url.origin}/healthz`), 'no longer accepting');
  });

  it('on SIGTERM ends event streams, closes idle connections at once, refuses new requests in the envelope and exits quickly', async (t) => {
    const dir = scratch();
    const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--state-dir', dir, '--workspace-root', dir, '--log-level', 'warn'], { env: { PATH: process.env.PATH, HOME: process.env.HOME } });
    killWhenDone(t, child);
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    while (!/listening on (http:\/\/\S+)/.test(output)) await once(child.stdout, 'data');
    const url = new URL(output.match(/listening on (http:\/\/\S+)/)![1]);
    const exited = once(child, 'exit');

    const source = new EventSource(`${url.origin}/v1/events`);
    await new Promise((resolve, reject) => {
      source.onopen = resolve;
      source.onerror = reject;
    });
    const told = new Promise<number>((resolve) => (source.onerror = () => resolve(source.readyState)));

    // an idle kept-alive connection, and one whose request head is still arriving
    const idle = connect(Number(url.port), url.hostname);
    let idleText = '';
    idle.on('data', (chunk) => (idleText += chunk));
    idle.write(`GET /healthz HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
    while (!idleText.includes('{"ok":true}')) await new Promise((resolve) => setTimeout(resolve, 5));
    const idleClosed = new Promise((resolve) => idle.once('close', resolve));
    const late = connect(Number(url.port), url.hostname);
    let lateText = '';
    late.on('data', (chunk) => (lateText += chunk));
    const lateClosed = new Promise((resolve) => late.once('close', resolve));
    late.write(`GET /v1/sessions HTTP/1.1\r\nHost: ${url.host}\r\n`);
    await new Promise((resolve) => setTimeout(resolve, 100));

    const signalled = Date.now();
    child.kill('SIGTERM');
    await idleClosed;
    // about time: left alone, an idle kept-alive connection closes at the 5 s keep-alive timeout; 2 s tells a close at the signal from that
    assert.ok(Date.now() - signalled < 2_000, 'the idle connection is closed at once');
    // the server is stopping now: the waiting request's head completes
    late.write('\r\n');
    // the stream ended: the client is reconnecting, not failed on an error body
    assert.equal(await told, EventSource.CONNECTING);
    source.close();
    await lateClosed;
    const body = JSON.parse(lateText.slice(lateText.indexOf('\r\n\r\n') + 4));
    assert.match(lateText, /^HTTP\/1\.1 503 /);
    assert.match(lateText, /\r\nretry-after: 10\r\n/i);
    assert.equal(body.error.code, 'server_stopping');
    assert.match(lateText, new RegExp(`\\r\\nx-request-id: ${body.error.requestId}\\r\\n`, 'i'));
    const [code] = await exited;
    assert.equal(code, 0);
    assert.ok(Date.now() - signalled < 5_000, `exited ${Date.now() - signalled} ms after the signal`);
  });
});
