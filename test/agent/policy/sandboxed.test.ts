/** The sandboxed rules of the policy (CONTRACT.md §12): nothing is asked, refusals stay. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decideToolCall, PLAN_MODE_REFUSAL, type PolicyContext } from '../../../src/agent/policy/decide.ts';
import { classifyGuestPath } from '../../../src/sandbox/guest-paths.ts';
import { loadBashParser } from '../../../src/agent/policy/bash-parser.ts';

await loadBashParser();

const roots = ['/workspace'];
const cwd = '/workspace/app';
const context = (paths: string[], overrides: Partial<PolicyContext> = {}): PolicyContext => ({
  planMode: false,
  yolo: false,
  sessionAllowances: new Set(),
  confinedExecution: false,
  sandboxed: true,
  paths: paths.map((path) => classifyGuestPath(roots, path, cwd)),
  ...overrides,
});
const shell = (command: string) => ({ name: 'shell', input: JSON.stringify({ command }), plan: { readOnly: false, paths: ['.'], command } });
const patch = (path: string) => ({ name: 'apply_patch', input: 'patch', plan: { readOnly: false, paths: [path] } });

test('a command that changes things runs unasked in the sandbox, and asks on the host', () => {
  assert.deepEqual(decideToolCall(shell('npm install'), context(['.'])), { action: 'run', unattended: false });
  assert.equal(decideToolCall(shell('npm install'), context(['.'], { sandboxed: false })).action, 'ask');
});

test('a path elsewhere in the guest workspace never asks root_access; one outside it is refused', () => {
  assert.deepEqual(decideToolCall(patch('../lib/x.ts'), context(['../lib/x.ts'])), { action: 'run', unattended: false });
  for (const outside of ['/etc/passwd', '../../etc/passwd', '~/.ssh/id_rsa', '/workspace-other/x']) {
    const decision = decideToolCall(patch(outside), context([outside]));
    assert.equal(decision.action, 'refuse', outside);
  }
});

test('plan mode and the dangerous-command refusals still hold', () => {
  assert.deepEqual(decideToolCall(shell('echo x > y'), context(['.'], { planMode: true })), { action: 'refuse', reason: PLAN_MODE_REFUSAL });
  assert.match((decideToolCall(shell('rm -rf /'), context(['.'])) as { reason: string }).reason, /^Refused: .*never run/);
});
