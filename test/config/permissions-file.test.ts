import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/config.ts';

const cwd = mkdtempSync(join(tmpdir(), 'agentd-permissions-'));
const load = (args: string[]) => loadConfig(['--state-dir', join(cwd, 'state'), ...args], {}, cwd);
let files = 0;
const file = (content: unknown) => {
  const path = join(cwd, `rules-${files++}.json`);
  writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
};

describe('--permissions-file', () => {
  it('reads the rules in file order, and none without the flag', async () => {
    const rules = [
      { tool: 'shell', pattern: '*', action: 'ask' },
      { tool: 'shell', pattern: 'npm test*', action: 'allow' },
      { tool: 'read_file', pattern: '.env*', action: 'deny' },
      { tool: 'mcp__github__create_issue', pattern: '*', action: 'deny' },
    ];
    assert.deepEqual((await load(['--permissions-file', file({ rules })])).permissionRules, rules);
    assert.deepEqual((await load(['--permissions-file', file({ rules: [] })])).permissionRules, []);
    assert.deepEqual((await load([])).permissionRules, []);
  });

  const invalid: [string, unknown, RegExp][] = [
    ['not JSON', '{"rules": [', /: is not valid JSON$/],
    ['an array', [], /: must be a JSON object with a "rules" array$/],
    ['an unknown top-level field', { rules: [], extra: 1 }, /: extra: unknown field \(expected only "rules"\)$/],
    ['rules not an array', { rules: {} }, /: rules: must be an array/],
    ['a rule not an object', { rules: ['shell'] }, /: rules\[0\]: must be an object/],
    ['an unknown rule field', { rules: [{ tool: 'shell', pattern: '*', action: 'deny', why: 'x' }] }, /: rules\[0\]\.why: unknown field/],
    ['a missing tool', { rules: [{ pattern: '*', action: 'deny' }] }, /: rules\[0\]\.tool: must be a tool name/],
    ['a tool name with a space', { rules: [{ tool: 'read file', pattern: '*', action: 'deny' }] }, /: rules\[0\]\.tool: must be a tool name/],
    ['an empty pattern', { rules: [{ tool: 'shell', pattern: '', action: 'deny' }] }, /: rules\[0\]\.pattern: must be a non-empty string/],
    ['a pattern not a string', { rules: [{ tool: 'shell', pattern: 5, action: 'deny' }] }, /: rules\[0\]\.pattern: must be a non-empty string/],
    ['an unknown action in the second rule', { rules: [{ tool: 'shell', pattern: '*', action: 'deny' }, { tool: 'shell', pattern: '*', action: 'block' }] }, /: rules\[1\]\.action: must be "allow", "ask" or "deny"$/],
  ];
  for (const [name, content, message] of invalid) {
    it(`refuses ${name} with one line naming the file and the field`, async () => {
      const path = file(content);
      await assert.rejects(load(['--permissions-file', path]), (error: Error) => {
        assert.ok(error.message.startsWith(`--permissions-file ${path}: `), error.message);
        assert.match(error.message, message);
        assert.equal(error.message.split('\n').length, 1);
        assert.equal(error.constructor.name, 'UsageError');
        return true;
      });
    });
  }

  it('refuses a file that does not exist', () => assert.rejects(load(['--permissions-file', join(cwd, 'none.json')]), /--permissions-file .*none\.json: the file does not exist$/));

  it('a broken file stops `agentd serve` with exit status 2 before binding', () => {
    const bin = new URL('../../bin/agentd.js', import.meta.url).pathname;
    const path = file({ rules: [{ tool: 'shell', pattern: '*', action: 'maybe' }] });
    const result = spawnSync(process.execPath, [bin, 'serve', '--state-dir', join(cwd, 'state'), '--port', '0', '--permissions-file', path], { encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH, HOME: process.env.HOME } });
    assert.equal(result.status, 2);
    assert.match(result.stderr, /rules\[0\]\.action: must be "allow", "ask" or "deny"/);
  });
});
