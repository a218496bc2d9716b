/**
 * Judges a shell tool command (an argv array or a bash string): is it provably read-only, can it
 * destroy the machine, and what prefix identifies it for an allow-for-the-session approval.
 */
import path from 'node:path';
import { dangerOf, forkBombIn } from './dangerous-commands.ts';
import { isReadOnlyProgram, mentionsOutsidePath } from './read-only-commands.ts';
import { parseShell, type ShellScript, type SimpleCommand } from './shell-syntax.ts';

export interface CommandAnalysis {
  readOnly: boolean;
  /** why the command is refused outright, or null */
  danger: string | null;
  /** the first two words of a simple command, or the whole command when it is compound */
  prefix: string;
  /** the command as a person would type it */
  display: string;
}

const SHELLS = new Set(['bash', 'sh', 'zsh', 'dash', 'ksh']);
const READ_ONLY_OPERATORS = new Set(['|', '|&', '&&', '||', ';', '\n', '(', ')']);
const NULL_REDIRECTIONS = new Set(['>', '>>', '>|', '&>', '&>>']);
const MAX_NESTING = 5;

export function analyzeCommand(command: string[] | string): CommandAnalysis {
  if (typeof command === 'string') return analyzeScript(command, parseShell(command), 0);
  const nested = nestedShellScript(command);
  if (nested !== null) return { ...analyzeScript(nested, parseShell(nested), 1), display: quoteArgv(command) };
  const script: ShellScript = {
    commands: [{ argv: command, assignments: [], redirections: [] }],
    operators: [],
    substitutions: [],
    expands: false,
    tilde: false,
    heredoc: false,
    malformed: false,
  };
  return analyzeScript(quoteArgv(command), script, 0);
}

function analyzeScript(source: string, script: ShellScript, depth: number): CommandAnalysis {
  return {
    readOnly: isReadOnlyScript(script),
    danger: dangerIn(source, script, depth),
    prefix: prefixOf(source, script),
    display: source,
  };
}

function isReadOnlyScript(script: ShellScript): boolean {
  if (script.malformed || script.heredoc || script.expands || script.tilde || script.substitutions.length > 0) return false;
  if (script.commands.length === 0 || !script.operators.every((operator) => READ_ONLY_OPERATORS.has(operator))) return false;
  return script.commands.every(isReadOnlyCommand);
}

function isReadOnlyCommand(command: SimpleCommand): boolean {
  if (command.assignments.length > 0 || !isReadOnlyProgram(command.argv)) return false;
  if (command.argv.slice(1).some(mentionsOutsidePath)) return false;
  return command.redirections.every(({ operator, target }) => {
    if (NULL_REDIRECTIONS.has(operator)) return target === '/dev/null';
    if (operator === '>&' || operator === '<&') return /^(\d+|-)$/.test(target);
    if (operator === '<') return !mentionsOutsidePath(target);
    return operator === '<<<';
  });
}

function dangerIn(source: string, script: ShellScript, depth: number): string | null {
  if (forkBombIn(source)) return 'it is a fork bomb';
  if (depth > MAX_NESTING) return null;
  for (const command of script.commands) {
    for (const invocation of unwrap(command.argv)) {
      if (typeof invocation === 'string') {
        const nested = dangerIn(invocation, parseShell(invocation), depth + 1);
        if (nested) return nested;
        continue;
      }
      const danger = dangerOf(invocation, command.redirections);
      if (danger) return danger;
    }
  }
  for (const body of script.substitutions) {
    const nested = dangerIn(body, parseShell(body), depth + 1);
    if (nested) return nested;
  }
  return null;
}

/** Options of wrapper programs that take a separate value (`sudo -u root`, `timeout -s KILL 5`). */
const WRAPPERS: Record<string, { valued: Set<string>; positional: number }> = {
  sudo: { valued: new Set(['-u', '-g', '-C', '-D', '-h', '-p', '-r', '-t', '-U', '-T']), positional: 0 },
  doas: { valued: new Set(['-u', '-C']), positional: 0 },
  env: { valued: new Set(['-u', '-C', '--unset', '--chdir']), positional: 0 },
  nice: { valued: new Set(['-n', '--adjustment']), positional: 0 },
  ionice: { valued: new Set(['-c', '-n', '-p', '-t']), positional: 0 },
  nohup: { valued: new Set(), positional: 0 },
  time: { valued: new Set(['-f', '-o']), positional: 0 },
  command: { valued: new Set(), positional: 0 },
  exec: { valued: new Set(['-a']), positional: 0 },
  stdbuf: { valued: new Set(['-i', '-o', '-e']), positional: 0 },
  timeout: { valued: new Set(['-s', '-k', '--signal', '--kill-after']), positional: 1 },
  xargs: { valued: new Set(['-I', '-n', '-P', '-L', '-s', '-d', '-E', '-a']), positional: 0 },
  busybox: { valued: new Set(), positional: 0 },
};

/**
 * The program invocations hidden in one argv: the argv itself, what each wrapper runs, and the
 * script of a nested `bash -c` or `eval` (returned as a string to be parsed).
 */
function unwrap(argv: readonly string[]): (readonly string[] | string)[] {
  const found: (readonly string[] | string)[] = [argv];
  let current = argv;
  for (let hop = 0; hop < MAX_NESTING && current.length > 0; hop++) {
    const program = path.posix.basename(current[0]);
    const nested = nestedShellScript(current);
    if (nested !== null) return [...found, nested];
    if (program === 'eval') return [...found, current.slice(1).join(' ')];
    const wrapper = Object.hasOwn(WRAPPERS, program) ? WRAPPERS[program] : undefined;
    if (!wrapper) return found;
    let index = 1;
    while (index < current.length && (current[index].startsWith('-') || (program === 'env' && current[index].includes('=')))) {
      index += wrapper.valued.has(current[index]) ? 2 : 1;
    }
    current = current.slice(index + wrapper.positional);
    found.push(current);
  }
  return found;
}

/** The script of `bash -c '…'`, `sh -lc '…'` and the like, or null. */
function nestedShellScript(argv: readonly string[]): string | null {
  if (argv.length < 3 || !SHELLS.has(path.posix.basename(argv[0]))) return null;
  for (let index = 1; index < argv.length; index++) {
    const arg = argv[index];
    if (!arg.startsWith('-')) return null;
    if (/^-[a-z]*c[a-z]*$/.test(arg)) return argv[index + 1] ?? null;
  }
  return null;
}

function prefixOf(source: string, script: ShellScript): string {
  const simple =
    script.commands.length === 1 &&
    script.operators.every((operator) => operator === '\n' || operator === ';') &&
    script.substitutions.length === 0 &&
    !script.heredoc &&
    !script.malformed &&
    script.commands[0].assignments.length === 0 &&
    script.commands[0].redirections.length === 0;
  const words = script.commands[0]?.argv.slice(0, 2) ?? [];
  if (!simple || words.length === 0 || words.some((word) => word.includes('$') || word.includes('`'))) return source.trim();
  // `sudo x`, `timeout 5 …`, `bash -c …`: the first words say nothing about what finally runs.
  if (runsAnotherCommand(words[0])) return source.trim();
  return words.join(' ');
}

function runsAnotherCommand(program: string): boolean {
  const name = path.posix.basename(program);
  return SHELLS.has(name) || name === 'eval' || Object.hasOwn(WRAPPERS, name);
}

function quoteArgv(argv: readonly string[]): string {
  return argv.map((word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`)).join(' ');
}
