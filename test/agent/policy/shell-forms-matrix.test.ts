// CONTRACT.md §21 as a matrix: every dangerous-command rule, a deny rule and an ask rule, each in
// every form that hides a command in a shell line (test/support/shell-forms.ts), judged by the real
// policy. The same forms run on a real shell through a real turn in test/e2e/shell-forms.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadBashParser } from '../../../src/agent/policy/bash-parser.ts';
import { analyzeCommand } from '../../../src/agent/policy/command-analysis.ts';
import { readCommandLine } from '../../../src/agent/policy/command-line.ts';
import { decideToolCall, type PolicyContext } from '../../../src/agent/policy/decide.ts';
import type { PermissionRule } from '../../../src/agent/policy/permission-rules.ts';
import { canonicalizeInside } from '../../../src/workspace/paths.ts';
import { COMPUTED_PROGRAMS, SHELL_FORMS } from '../../support/shell-forms.ts';

await loadBashParser();

const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-forms-')));

/** One command per rule of dangerous-commands.ts (and the fork bomb), none holding a single quote. */
const DANGEROUS = [
  'rm -rf /', 'rm -r --no-preserve-root /tmp/x', 'chmod -R 777 /', 'chown -R nobody /', 'chgrp nogroup /', 'mv /etc /tmp/etc',
  'mkfs.ext4 -F scratch.img', 'mke2fs scratch.img', 'mkswap /dev/sdb', 'wipefs -a /dev/sda', 'fdisk /dev/sda', 'sfdisk /dev/sda',
  'cfdisk /dev/sda', 'parted /dev/sda', 'sgdisk -Z /dev/sda', 'gdisk /dev/sda', 'blkdiscard /dev/sda', 'dd if=/dev/zero of=/dev/sda',
  'tee /dev/sda', 'cp x /dev/sda', 'shred -n 1 /home', 'shutdown -h now', 'reboot', 'halt', 'poweroff', 'init 0', 'telinit 6',
  'systemctl poweroff', 'kill -9 -1', 'find / -delete', 'echo x > /dev/sda', ':(){ :|:& };:',
];

function context(overrides: Partial<PolicyContext> = {}, rules: PermissionRule[] = []): PolicyContext {
  return { planMode: false, yolo: false, sessionAllowances: new Set(), paths: [canonicalizeInside([workspace], '.', workspace)], confinedExecution: true, rules, cwd: workspace, ...overrides };
}

const decide = (command: string, overrides: Partial<PolicyContext> = {}, rules: PermissionRule[] = []) =>
  decideToolCall({ name: 'shell', input: JSON.stringify({ command }), plan: { readOnly: false, paths: ['.'], command } }, context(overrides, rules));
const reasonOf = (decision: ReturnType<typeof decide>) => (decision.action === 'refuse' ? decision.reason : `not refused: ${decision.action}`);
const denyTouch: PermissionRule[] = [{ tool: 'shell', pattern: 'touch *', action: 'deny' }];
const askTouch: PermissionRule[] = [{ tool: 'shell', pattern: 'touch *', action: 'ask' }];

test('every dangerous-command rule is refused in every form, yolo included, as that danger (not merely as unknown)', () => {
  for (const command of DANGEROUS) {
    for (const form of SHELL_FORMS) {
      const line = form.wrap(command);
      const label = `${form.name}: ${JSON.stringify(line)}`;
      assert.notEqual(analyzeCommand(line, { confined: true, cwd: workspace }).danger, null, label);
      assert.match(reasonOf(decide(line, { yolo: true })), /destroy the machine/, label);
      assert.match(reasonOf(decide(line, { sandboxed: true })), /destroy the machine/, label);
    }
  }
});

test('a deny rule refuses its command in every form, yolo included, quoting the rule', () => {
  for (const form of SHELL_FORMS) {
    const line = form.wrap('touch made.txt');
    for (const overrides of [{}, { yolo: true }, { sandboxed: true }, { sessionAllowances: new Set(['shell:touch made.txt']) }]) {
      assert.match(reasonOf(decide(line, overrides, denyTouch)), /pattern "touch \*"/, `${form.name}: ${JSON.stringify(line)}`);
    }
  }
});

test('an ask rule asks for its command in every form, yolo and the sandbox included', () => {
  for (const form of SHELL_FORMS) {
    const line = form.wrap('touch made.txt');
    for (const overrides of [{}, { yolo: true }, { sandboxed: true }]) {
      const decision = decide(line, overrides, askTouch);
      assert.ok(decision.action === 'ask' && decision.kind === 'tool_approval', `${form.name}: ${JSON.stringify(line)} gave ${decision.action}`);
    }
  }
});

test('a program computed at run time is unknown: refused under a deny rule, an ask rule, yolo and the sandbox, saying why', () => {
  for (const { name, line } of COMPUTED_PROGRAMS) {
    const touch = line('touch', 'made.txt');
    assert.match(reasonOf(decide(touch, {}, denyTouch)), /(run time|cannot read).*pattern "touch \*"/, `${name}: ${touch}`);
    assert.match(reasonOf(decide(touch, { yolo: true }, askTouch)), /run time|cannot read/, `${name}: ${touch}`);
    const mkfs = line('mkfs.ext4', '-F scratch.img');
    for (const overrides of [{}, { yolo: true }, { sandboxed: true }, { sessionAllowances: new Set([`shell:${mkfs}`]) }]) {
      assert.match(reasonOf(decide(mkfs, overrides)), /destroy the machine/, `${name}: ${mkfs}`);
    }
  }
  assert.match(reasonOf(decide('c=touch; $c x', { yolo: true })), /the program name is computed at run time \(\$c\)/);
  // and it never counts as read-only, nor is it allowed by an allow rule
  assert.equal(analyzeCommand('$(echo ls)', { confined: true, cwd: workspace }).readOnly, false);
  assert.equal(decide('$(echo ls)', {}, [{ tool: 'shell', pattern: '*', action: 'allow' }]).action, 'refuse');
});

test('a line the parser cannot fully read is unknown: refused, saying why', () => {
  for (const line of ['if true; then touch x', 'echo $(touch x', 'ls @(a|b)', 'coproc N { touch x; }', 'echo `echo \\`touch x\\``', 'echo a{$c-']) {
    assert.match(reasonOf(decide(line, { yolo: true }, denyTouch)), /pattern "touch \*"/, line);
    assert.match(reasonOf(decide(line, { yolo: true })), /destroy the machine/, line);
  }
});

test('near misses still run: read-only lines unattended, loops and look-alikes as before', () => {
  for (const line of ['git status', 'ls | wc -l', 'ls -la && git log --oneline -n 3', '( ls ) ; cat README.md 2>/dev/null']) {
    assert.deepEqual(decide(line), { action: 'run', unattended: true }, line);
    assert.deepEqual(decide(line, {}, denyTouch), { action: 'run', unattended: true }, line);
  }
  for (const line of ['for i in a b; do echo "$i"; done', 'echo touch', 'cat touch.txt', 'grep -r touch .', 'mkdir made', 'f() { echo hi; }; f', 'x=$(date); echo "$x"', 'find . -name "*.ts" -exec grep -l touch {} +']) {
    assert.equal(decide(line, { yolo: true }, denyTouch).action, 'run', line);
    const asked = decide(line, {}, denyTouch);
    assert.ok(asked.action === 'ask' || (asked.action === 'run' && asked.unattended), `${line} gave ${asked.action}`);
  }
  assert.equal(decide('for i in a b; do echo "$i"; done').action, 'ask', 'a loop asks, as any line not provably read-only did before');
});

test('the `-` tree-sitter-bash drops before a heredoc (`python3 - <<EOF`) is read back as the argument bash gives', () => {
  const python = "python3 - <<'EOF'\nprint(1)\nEOF";
  assert.equal(readCommandLine(python).unknown, null);
  assert.deepEqual(readCommandLine(python).invocations.map((invocation) => invocation.argv), [['python3', '-']]);
  assert.equal(decide(python, { yolo: true }, denyTouch).action, 'run');
  assert.equal(decide(python).action, 'ask');
  assert.match(reasonOf(decide(python, {}, [{ tool: 'shell', pattern: 'python3 *', action: 'deny' }])), /pattern "python3 \*"/);
  // judged as the same line without the `-` is (a heredoc is not read-only: it asks)
  assert.equal(decide("cat - <<'EOF'\nhello\nEOF").action, decide("cat <<'EOF'\nhello\nEOF").action);
  assert.equal(decide("cat - <<'EOF'\nhello\nEOF", { yolo: true }, denyTouch).action, 'run');
  // a dangerous program in the same form is still refused, as that danger
  assert.match(reasonOf(decide("mkfs.ext4 - <<'EOF'\nx\nEOF", { yolo: true })), /destroy the machine/);
  // any other text the tree skips before a heredoc is still unknown
  assert.match(reasonOf(decide("python3 -<<'EOF'\nx\nEOF", { yolo: true }, denyTouch)), /parser read "-<<" as "<<"/);
  assert.deepEqual(readCommandLine("cat - - <<'EOF'\nx\nEOF").invocations[0].argv, ['cat', '-', '-']);
});

test('interpreter code is not shell: the interpreter is judged, not what its code runs', () => {
  const line = `python3 -c "import os; os.system('touch made.txt')"`;
  assert.deepEqual(readCommandLine(line).invocations.map((invocation) => invocation.argv[0]), ['python3']);
  assert.equal(decide(line, { yolo: true }, denyTouch).action, 'run', 'a deny rule on touch cannot see into python');
  assert.match(reasonOf(decide(line, { yolo: true }, [{ tool: 'shell', pattern: 'python3 *', action: 'deny' }])), /pattern "python3 \*"/);
  for (const [program, flag] of [['perl', '-e'], ['node', '-e'], ['ruby', '-e']]) {
    assert.equal(decide(`${program} ${flag} 'print 1'`).action, 'ask', program);
  }
});

test('su, runuser and script: a command run through -c, through -u, or fed on standard input is judged', () => {
  const runs = (line: string) => readCommandLine(line).invocations.map((invocation) => invocation.argv.join(' '));
  assert.deepEqual(runs("su -c 'touch x'"), ['su -c touch x', 'touch x']);
  assert.deepEqual(runs("su --command='touch x' root").at(-1), 'touch x');
  assert.deepEqual(runs('su -ctouch').at(-1), 'touch');
  assert.deepEqual(runs('runuser -u nobody touch x').at(-1), 'touch x');
  assert.deepEqual(runs("script -O log -qc 'touch x' /dev/null").at(-1), 'touch x');
  assert.deepEqual(runs("echo 'touch x' | su").at(-1), 'touch x');
  assert.deepEqual(runs('su'), ['su']);
  assert.match(readCommandLine("su -c 'touch x' -s /usr/bin/python3").unknown ?? '', /python3, a shell agentd does not read/);
  assert.match(readCommandLine('c=x; su -c "$c"').unknown ?? '', /su runs a script computed at run time/);
});
