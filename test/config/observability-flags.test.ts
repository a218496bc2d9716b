import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/config.ts';

const cwd = mkdtempSync(join(tmpdir(), 'agentd-flags-'));
const load = (args: string[]) => loadConfig(['--state-dir', join(cwd, 'state'), ...args], {}, cwd);

describe('--metrics-port and --metrics-host', () => {
  it('are off by default, and the metrics host follows --host', async () => {
    assert.equal((await load([])).metricsPort, null);
    const config = await load(['--metrics-port', '9464', '--host', '127.0.0.2']);
    assert.equal(config.metricsPort, 9464);
    assert.equal(config.metricsHost, '127.0.0.2');
    assert.equal((await load(['--metrics-port', '0', '--metrics-host', '::1'])).metricsHost, '::1');
  });

  const refusals: [string, string[], RegExp][] = [
    ['a port past the range', ['--metrics-port', '65536'], /^--metrics-port: must be between 0 and 65535$/],
    ['a non-integer port', ['--metrics-port', '94x'], /^--metrics-port: expected an integer/],
    ['a host without a port', ['--metrics-host', '127.0.0.1'], /^--metrics-host: only valid with --metrics-port$/],
    ['an empty host', ['--metrics-port', '1', '--metrics-host', ' '], /^--metrics-host: must not be empty$/],
    ['a non-loopback host without --allow-remote', ['--metrics-port', '9464', '--metrics-host', '0.0.0.0'], /^--metrics-host: 0.0.0.0 is not a loopback address; pass --allow-remote/],
    ['the API port', ['--port', '4100', '--metrics-port', '4100'], /^--metrics-port: must differ from --port$/],
  ];
  for (const [name, args, message] of refusals) {
    it(`refuses ${name}`, () => assert.rejects(load(args), (error: Error) => message.test(error.message) && error.constructor.name === 'UsageError'));
  }
});

describe('--mcp-config', () => {
  const file = (content: unknown) => {
    const path = join(mkdtempSync(join(tmpdir(), 'agentd-mcp-config-')), 'mcp.json');
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
    return path;
  };

  it('reads stdio and streamable HTTP servers', async () => {
    const path = file({
      mcpServers: {
        docs: { command: 'npx', args: ['-y', 'docs-mcp'], env: { DOCS_TOKEN: 'x' } },
        'issue-tracker': { type: 'http', url: 'https://mcp.example.com/mcp', headers: { authorization: 'Bearer y' } },
        plain: { command: '/usr/local/bin/plain-mcp' },
      },
    });
    assert.deepEqual((await load(['--mcp-config', path])).mcpServers, [
      { kind: 'stdio', name: 'docs', command: 'npx', args: ['-y', 'docs-mcp'], env: { DOCS_TOKEN: 'x' } },
      { kind: 'http', name: 'issue-tracker', url: 'https://mcp.example.com/mcp', headers: { authorization: 'Bearer y' } },
      { kind: 'stdio', name: 'plain', command: '/usr/local/bin/plain-mcp', args: [], env: {} },
    ]);
    assert.deepEqual((await load([])).mcpServers, []);
  });

  const invalid: [string, unknown, RegExp][] = [
    ['not JSON', '{"mcpServers": ', /: is not valid JSON$/],
    ['an array', [], /: must be a JSON object with an "mcpServers" object$/],
    ['no mcpServers', { servers: {} }, /: servers: unknown field \(expected only "mcpServers"\)$/],
    ['mcpServers not an object', { mcpServers: [] }, /: mcpServers: must be an object of named servers$/],
    ['a name with __', { mcpServers: { a__b: { command: 'x' } } }, /: mcpServers\.a__b: a server name is 1 to 32 letters/],
    ['a name with a dot', { mcpServers: { 'a.b': { command: 'x' } } }, /: mcpServers\.a\.b: a server name/],
    ['both command and url', { mcpServers: { s: { command: 'x', url: 'http://h' } } }, /: mcpServers\.s: give exactly one of "command" \(stdio\) or "url"/],
    ['neither', { mcpServers: { s: { args: [] } } }, /: mcpServers\.s: give exactly one of/],
    ['an empty command', { mcpServers: { s: { command: '' } } }, /: mcpServers\.s\.command: must be a non-empty string$/],
    ['args not strings', { mcpServers: { s: { command: 'x', args: ['a', 1] } } }, /: mcpServers\.s\.args: must be an array of strings$/],
    ['an env value not a string', { mcpServers: { s: { command: 'x', env: { KEY: 5 } } } }, /: mcpServers\.s\.env\.KEY: must be a string$/],
    ['headers on a stdio server', { mcpServers: { s: { command: 'x', headers: {} } } }, /: mcpServers\.s\.headers: unknown field for a stdio server$/],
    ['a url that is not one', { mcpServers: { s: { url: 'mcp.example.com' } } }, /: mcpServers\.s\.url: not a URL$/],
    ['a file url', { mcpServers: { s: { url: 'file:///etc/passwd' } } }, /: mcpServers\.s\.url: must be an http:\/\/ or https:\/\/ URL$/],
    ['a header not a string', { mcpServers: { s: { url: 'http://h', headers: { authorization: ['x'] } } } }, /: mcpServers\.s\.headers\.authorization: must be a string$/],
    ['a mismatched type', { mcpServers: { s: { type: 'sse', url: 'http://h' } } }, /: mcpServers\.s\.type: must be "http" or "streamable-http"/],
  ];
  for (const [name, content, message] of invalid) {
    it(`refuses ${name} with one line naming the file and the field`, async () => {
      const path = file(content);
      await assert.rejects(load(['--mcp-config', path]), (error: Error) => {
        assert.ok(error.message.startsWith(`--mcp-config ${path}: `), error.message);
        assert.match(error.message, message);
        assert.equal(error.message.split('\n').length, 1);
        return error.constructor.name === 'UsageError';
      });
    });
  }

  it('refuses a missing file or a directory, and never quotes a secret value', async () => {
    await assert.rejects(load(['--mcp-config', join(cwd, 'none.json')]), /--mcp-config .*none\.json: the file does not exist$/);
    const directory = join(cwd, 'a-directory');
    mkdirSync(directory, { recursive: true });
    await assert.rejects(load(['--mcp-config', directory]), /is a directory, not a file$/);
    const path = file({ mcpServers: { s: { url: 'http://h', headers: { authorization: 'Bearer very-secret-value', other: 7 } } } });
    await assert.rejects(load(['--mcp-config', path]), (error: Error) => !error.message.includes('very-secret-value'));
  });
});
