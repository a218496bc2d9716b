/**
 * Judges a shell tool command (an argv array or a bash string): is it read-only enough to run
 * without a human, can it destroy the machine, and what an allow-for-the-session approval of it
 * remembers.
 *
 * How much may run unattended depends on where such commands run:
 * - confined (bubblewrap: read-only filesystem, no network, own PID namespace): a bash script of
 *   read-only programs joined by pipes, `;`, `&&`, `||`, with quoting and globs, input
 *   redirections and output only to /dev/null;
 * - on the host: only what is provably read-only without a shell: one command of plain literal
 *   words (literal-command.ts), a program and options from the read-only table, no git (repository
 *   config runs programs), every file argument inside the session directory after symlinks.
 */
import { commandKey, quoteArgv } from './allowance-key.ts';
import { dangerOf, forkBombIn } from './dangerous-commands.ts';
import { literalArgvOf } from './literal-command.ts';
import { shellScriptOf, unwrap } from './nested-commands.ts';
import { mentionsOutsidePath, readOnlyFileArguments } from './read-only-commands.ts';
import { parseShell, type ShellScript, type SimpleCommand } from './shell-syntax.ts';
import { canonicalizeInside } from '../../workspace/paths.ts';

export interface CommandAnalysis {
  readOnly: boolean;
  /** why the command is refused outright, or null */
  danger: string | null;
  /** what allow_session remembers for this command (see allowance-key.ts) */
  key: string;
  /** the command as a person would type it */
  display: string;
}

export interface AnalysisSituation {
  /** unattended commands run confined (bubblewrap) */
  confined: boolean;
  /** the real (symlink-free) directory the command runs in; null when unknown (nothing is then read-only) */
  cwd: string | null;
}

const READ_ONLY_OPERATORS = new Set(['|', '&&', '||', ';', '\n', '(', ')']);
const NULL_REDIRECTIONS = new Set(['>', '>>', '>|', '&>', '&>>']);
const MAX_NESTING = 5;

export function analyzeCommand(command: readonly string[] | string, situation: AnalysisSituation): CommandAnalysis {
  const source = typeof command === 'string' ? command : quoteArgv(command);
  const script = typeof command === 'string' ? parseShell(command) : argvScript(command);
  const { confined, cwd } = situation;
  return {
    readOnly: cwd !== null && (confined ? isReadOnlyConfined(command, script, cwd) : isReadOnlyOnHost(command, cwd)),
    danger: dangerIn(source, script, 0),
    key: commandKey(source, script),
    display: source,
  };
}

/** The allow_session key of a command, without judging it otherwise. */
export function keyOfCommand(command: readonly string[] | string): string {
  return typeof command === 'string' ? commandKey(command, parseShell(command)) : commandKey(quoteArgv(command), argvScript(command));
}

function argvScript(argv: readonly string[]): ShellScript {
  return {
    commands: [{ argv: [...argv], assignments: [], redirections: [] }],
    operators: [],
    substitutions: [],
    expands: false,
    tilde: false,
    globs: false,
    braces: false,
    heredoc: false,
    malformed: false,
  };
}

function isReadOnlyOnHost(command: readonly string[] | string, cwd: string): boolean {
  const argv = literalArgvOf(command);
  const files = argv === null ? null : readOnlyFileArguments(argv, false);
  return files !== null && !files.some((file) => mentionsOutsidePath(file, [cwd]));
}

function isReadOnlyConfined(command: readonly string[] | string, script: ShellScript, cwd: string): boolean {
  if (typeof command !== 'string') {
    // `bash -c '…'` / `bash -lc '…'` as argv: judge the script, nothing else about the shell
    const nested = command.length === 3 && (command[1] === '-c' || command[1] === '-lc') ? shellScriptOf(command) : null;
    if (nested !== null) return isReadOnlyConfined(nested[0], parseShell(nested[0]), cwd);
  }
  if (script.malformed || script.heredoc || script.expands || script.tilde || script.braces || script.substitutions.length > 0) return false;
  if (script.commands.length === 0 || !script.operators.every((operator) => READ_ONLY_OPERATORS.has(operator))) return false;
  const bases = directoriesVisited(script.commands, cwd);
  return script.commands.every((simple) => isReadOnlyCommand(simple, bases));
}

/**
 * The session directory and every directory a `cd` may have moved to: a relative path is judged
 * from each of them, since a subshell or pipe may undo a cd.
 */
function directoriesVisited(commands: readonly SimpleCommand[], cwd: string): string[] {
  const bases = [cwd];
  for (const { argv } of commands) {
    if (argv[0] !== 'cd' || argv[1] === undefined) continue;
    for (const base of [...bases]) bases.push(canonicalizeInside([base], argv[1], base).resolved);
  }
  return bases;
}

function isReadOnlyCommand(command: SimpleCommand, bases: readonly string[]): boolean {
  if (command.assignments.length > 0) return false;
  const files = readOnlyFileArguments(command.argv, true);
  if (files === null || files.some((file) => mentionsOutsidePath(file, bases))) return false;
  return command.redirections.every(({ operator, target }) => {
    if (NULL_REDIRECTIONS.has(operator)) return target === '/dev/null';
    if (operator === '>&' || operator === '<&') return /^(\d+|-)$/.test(target);
    if (operator === '<') return !mentionsOutsidePath(target, bases);
    return false;
  });
}

function dangerIn(source: string, script: ShellScript, depth: number): string | null {
  if (forkBombIn(source)) return 'it is a fork bomb';
  if (depth > MAX_NESTING) return null;
  for (const command of script.commands) {
    const { invocations, scripts } = unwrap(command.argv, command.redirections);
    for (const invocation of invocations) {
      const danger = dangerOf(invocation, command.redirections);
      if (danger) return danger;
    }
    for (const nested of scripts) {
      const danger = dangerIn(nested, parseShell(nested), depth + 1);
      if (danger) return danger;
    }
  }
  for (const body of script.substitutions) {
    const nested = dangerIn(body, parseShell(body), depth + 1);
    if (nested) return nested;
  }
  return null;
}
