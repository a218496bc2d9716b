/**
 * The bash parser's cost per shell command (CONTRACT.md §21, issue 39): tree-sitter-bash through
 * web-tree-sitter, read into the policy's view of the line (src/agent/policy/shell-syntax.ts), and
 * the whole decision for a shell call (decideToolCall with a deny rule: the parse, the unwrapping,
 * the dangerous-command check, the rules, the read-only judgement and the allowance key).
 *
 * Lines: short ones an agent sends every turn, and two of 4 KiB (a long chain of commands; a 4 KiB
 * script fed to bash by a heredoc, parsed twice: the line, then the script). Each is judged
 * BENCH_ROUNDS times (default 5,000) after 500 to warm up, in turn with the others; each judgement
 * of a 4 KiB line is timed alone. Prints p50 and p99 of wall time and the process's CPU time per
 * judgement (the decision cache is defeated by a changing trailing comment). Beside the chain's
 * parse, tree-sitter-bash's own parse of it with nothing read from the tree: what no reader can go under.
 *
 *   node --import tsx bench/shell-parser.ts
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg } from 'node:os';
import { loadBashParser } from '../src/agent/policy/bash-parser.ts';
import { decideToolCall, type PolicyContext } from '../src/agent/policy/decide.ts';
import { parseShell } from '../src/agent/policy/shell-syntax.ts';
import { canonicalizeInside } from '../src/workspace/paths.ts';
import { fixed, percentile, printFigure, runIfMain } from './support/report.ts';

const TARGET_MS = 1;
const SHORT = ['git status', 'ls -la src | wc -l', 'npm test -- --grep "policy"', 'rg -n "TODO" src && git diff --stat', 'for f in *.ts; do wc -l "$f"; done'];
const CHAIN = buildTo(4096, (index) => `git log --oneline -n ${index} -- src/file-${index}.ts && `, 'echo done');
const HEREDOC = `bash <<'EOF'\n${buildTo(4096 - 20, (index) => `if [ -f src/f${index}.ts ]; then wc -l src/f${index}.ts; fi\n`, '')}EOF`;

function buildTo(bytes: number, piece: (index: number) => string, end: string): string {
  let line = '';
  for (let index = 0; line.length + piece(index).length + end.length <= bytes; index++) line += piece(index);
  return line + end;
}

const context: PolicyContext = {
  planMode: false,
  yolo: false,
  sessionAllowances: new Set(),
  paths: [canonicalizeInside(['/tmp'], '.', '/tmp')],
  confinedExecution: true,
  rules: [{ tool: 'shell', pattern: 'touch *', action: 'deny' }],
  cwd: '/tmp',
};

/**
 * tree-sitter-bash's own parse of a line, nothing read from the tree: the floor under every parse
 * figure, measured in the same run (a parser of its own, beside the policy's).
 */
async function grammarOnly(): Promise<(line: string) => void> {
  const { Parser, Language } = await import('web-tree-sitter');
  const resolve = createRequire(import.meta.url).resolve;
  await Parser.init({ wasmBinary: readFileSync(resolve('web-tree-sitter/web-tree-sitter.wasm')) });
  const parser = new Parser();
  parser.setLanguage(await Language.load(readFileSync(resolve('tree-sitter-bash/tree-sitter-bash.wasm'))));
  return (line) => parser.parse(line)?.delete();
}

interface Sample {
  wallMs: number;
  cpuMs: number;
}

function time(run: () => void): Sample {
  const cpu = process.cpuUsage();
  const start = performance.now();
  run();
  const wallMs = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return { wallMs, cpuMs: (used.user + used.system) / 1000 };
}

function report(name: string, samples: Sample[], withTarget: boolean): void {
  const wall = samples.map((sample) => sample.wallMs);
  const cpu = samples.map((sample) => sample.cpuMs);
  const p99 = percentile(wall, 0.99);
  printFigure({
    name,
    value: `${fixed(percentile(wall, 0.5), 3)} ms p50, ${fixed(p99, 3)} ms p99 wall; CPU ${fixed(percentile(cpu, 0.5), 3)} ms p50, ${fixed(percentile(cpu, 0.99), 3)} ms p99`,
    ...(withTarget ? { target: `< ${TARGET_MS} ms p99`, met: p99 < TARGET_MS } : {}),
    detail: `${samples.length} judgements; load average ${loadavg().map((value) => fixed(value)).join(' ')}; node ${process.version}`,
  });
}

runIfMain(import.meta.url, async () => {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5000);
  const loadStart = performance.now();
  await loadBashParser();
  const loadMs = performance.now() - loadStart;
  const parseOnly = await grammarOnly();
  const lines = { short: SHORT, chain: [CHAIN], heredoc: [HEREDOC] };
  const parse: Record<string, Sample[]> = { short: [], chain: [], heredoc: [] };
  const decide: Record<string, Sample[]> = { short: [], chain: [], heredoc: [] };
  const floor: Sample[] = [];
  for (let round = -500; round < rounds; round++) {
    for (const [kind, list] of Object.entries(lines)) {
      const line = `${list[(round + 500) % list.length]} # ${round}`;
      const parsed = time(() => parseShell(line));
      const decided = time(() => decideToolCall({ name: 'shell', input: '{}', plan: { readOnly: false, paths: ['.'], command: line } }, context));
      const grammar = kind === 'chain' ? time(() => parseOnly(line)) : null;
      if (round < 0) continue;
      if (grammar) floor.push(grammar);
      parse[kind].push(parsed);
      decide[kind].push(decided);
    }
  }
  printFigure({ name: 'Loading the parser (web-tree-sitter and the bash grammar, once per process)', value: `${fixed(loadMs, 1)} ms` });
  report(`Parse, short lines (${SHORT.length} kinds, ≤ ${Math.max(...SHORT.map((line) => line.length))} bytes)`, parse.short, false);
  report('Policy decision, short lines', decide.short, false);
  report('tree-sitter-bash alone, the 4 KiB chain (its parse, nothing read: the floor under the next line)', floor, false);
  report(`Parse, a 4 KiB chain of commands (${CHAIN.length} bytes)`, parse.chain, true);
  report('Policy decision, the 4 KiB chain', decide.chain, true);
  report(`Parse, a 4 KiB script heredoc'd into bash (${HEREDOC.length} bytes; the script itself parsed by the decision)`, parse.heredoc, true);
  report("Policy decision, the 4 KiB heredoc'd script", decide.heredoc, false);
});
