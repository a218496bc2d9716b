// Near misses of the read-only command table (read-only-programs.ts, read-only-commands.ts) and of
// plan mode: every option the table allows runs unattended, and the option one letter away, an
// abbreviation of an allowed long option, a letter outside a cluster or a writing look-alike asks
// (or, in plan mode, is refused).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decideToolCall, PLAN_MODE_REFUSAL, type PolicyContext } from '../../src/agent/policy/decide.ts';
import { READ_ONLY_PROGRAMS } from '../../src/agent/policy/read-only-programs.ts';
import { loadBashParser } from '../../src/agent/policy/bash-parser.ts';

await loadBashParser();

const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-edges-readonly-')));
after(() => rmSync(workspace, { recursive: true, force: true }));

function context(overrides: Partial<PolicyContext> = {}): PolicyContext {
  return { planMode: false, yolo: false, sessionAllowances: new Set(), paths: [{ requested: '.', resolved: workspace, location: 'cwd', root: workspace, exists: true }], confinedExecution: true, ...overrides };
}

function decide(command: string, overrides: Partial<PolicyContext> = {}) {
  return decideToolCall({ name: 'shell', input: JSON.stringify({ command }), plan: { readOnly: false, paths: ['.'], command } }, context(overrides));
}

const runsUnattended = (command: string) => assert.deepEqual(decide(command), { action: 'run', unattended: true }, `${command} is read-only`);
function asks(command: string): void {
  const decision = decide(command);
  assert.equal(decision.action, 'ask', `${command} must ask: ${JSON.stringify(decision)}`);
  assert.deepEqual(decide(command, { planMode: true }), { action: 'refuse', reason: PLAN_MODE_REFUSAL }, `${command} is refused in plan mode`);
}

const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
/** Programs whose options are checked letter by letter (find's primaries and ignored arguments aside). */
const OPTION_PROGRAMS = Object.entries(READ_ONLY_PROGRAMS).filter(([, options]) => !options.ignoresArguments && !options.primaries && options.operandPattern === undefined);

test('every short flag and long option of the table runs unattended, alone', () => {
  for (const [program, options] of OPTION_PROGRAMS) {
    for (const letter of options.flags ?? '') if (!/[0-9]/.test(letter)) runsUnattended(`${program} -${letter}`);
    for (const letter of options.valued ?? '') runsUnattended(`${program} -${letter} 1`);
    for (const option of options.long ?? []) runsUnattended(`${program} ${option}`);
    for (const option of options.longValued ?? []) runsUnattended(`${program} ${option}=1`);
  }
});

test('a letter outside the table, an abbreviated long option or an unknown one asks', () => {
  for (const [program, options] of OPTION_PROGRAMS) {
    const known = new Set([...(options.flags ?? ''), ...(options.valued ?? '')]);
    const outside = [...LETTERS].find((letter) => !known.has(letter))!;
    asks(`${program} -${outside}`);
    if (known.size > 0) asks(`${program} -${[...known][0]}${outside}`); // the unknown letter hidden in a cluster
    const longs = [...(options.long ?? []), ...(options.longValued ?? [])];
    for (const option of longs) {
      const abbreviation = option.slice(0, -1);
      if (!longs.includes(abbreviation) && abbreviation !== '--') asks(`${program} ${abbreviation}`);
    }
    asks(`${program} --output=x`);
  }
});

test('find: the allowed primaries run, the writing and executing ones ask', () => {
  for (const primary of ['-name x', '-iname x', '-type f', '-maxdepth 2', '-empty', '-print0', '-newer a', '-not -name x']) runsUnattended(`find . ${primary}`);
  for (const primary of ['-delete', '-exec rm {} ;', '-execdir rm {} +', '-ok rm {} ;', '-fprint out', '-fprintf out %p', '-fls out', '-fprint0 out']) asks(`find . ${primary}`);
  asks('find -L .');
});

test('writing look-alikes of read-only programs ask', () => {
  for (const command of [
    'sort -o out a', 'sort --output=out a', 'sort -T /tmp a', 'sort --compress-program=sh a', 'uniq a out', 'grep -R x .', 'tail -f log', 'date -s 2020-01-01', 'date 0101',
    'ls > out', 'cat a >> b', 'echo x > file', 'ls | tee out', 'ls; rm -f x', 'cat a && touch b', 'ls $(touch x)', 'ls `touch x`', 'rg --pre sh x', 'rg -L x', 'file -C', 'cd -',
    'sed -n p a', 'awk 1 a', 'printf x', 'test -v x', 'ps aux',
  ]) asks(command);
});

test('read-only commands combined stay read-only; one writer anywhere makes the whole ask', () => {
  for (const command of ['ls -la | grep x | wc -l', 'cat a; head -n 5 b', 'git status && git log --oneline -5', 'ls 2>/dev/null', 'find . -name x -print0 | sort -z']) runsUnattended(command);
  for (const command of ['ls | grep x | tee out', 'cat a; touch b', 'git status && git commit -m x', 'ls 2>err.log']) asks(command);
});

test('plan mode: a read-only command runs, yolo does not open the rest', () => {
  assert.deepEqual(decide('ls -la', { planMode: true }), { action: 'run', unattended: true });
  assert.deepEqual(decide('touch x', { planMode: true, yolo: true }), { action: 'refuse', reason: PLAN_MODE_REFUSAL });
  assert.deepEqual(decide('touch x', { planMode: true, sessionAllowances: new Set(['shell:touch x']) }), { action: 'refuse', reason: PLAN_MODE_REFUSAL });
  assert.deepEqual(decide('touch x', { planMode: true, sandboxed: true }), { action: 'refuse', reason: PLAN_MODE_REFUSAL });
  for (const tool of ['apply_patch', 'write_file']) {
    const decision = decideToolCall({ name: tool, input: '{}', plan: { readOnly: false, paths: ['a'] } }, context({ planMode: true, yolo: true }));
    assert.deepEqual(decision, { action: 'refuse', reason: PLAN_MODE_REFUSAL }, tool);
  }
  assert.deepEqual(decideToolCall({ name: 'read_file', input: '{}', plan: { readOnly: true, paths: ['a'] } }, context({ planMode: true })), { action: 'run', unattended: true });
});
