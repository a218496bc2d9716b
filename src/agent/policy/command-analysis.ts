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
import { commandKey } from './allowance-key.ts';
import { readCommandLine, type CommandLine } from './command-line.ts';
import { dangerOf, forkBombIn } from './dangerous-commands.ts';
import { literalArgvOf } from './literal-command.ts';
import { mentionsOutsidePath, readOnlyFileArguments } from './read-only-commands.ts';
import { wordText, type SimpleCommand } from './shell-syntax.ts';
import { canonicalizeInside } from '../../workspace/paths.ts';

export interface CommandAnalysis {
  readOnly: boolean;
  /** why the command is refused outright, or null */
  danger: string | null;
  /** why what the command runs is known only at run time (CONTRACT.md §21), or null */
  unknown: string | null;
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

const READ_ONLY_OPERATORS = new Set(['|', '&&', '||', ';']);
/** The constructs of a read-only line: commands joined by operators, subshells, words, redirections. */
const READ_ONLY_CONSTRUCTS = new Set(['program', 'list', 'pipeline', 'subshell', 'redirected_statement', 'command', 'command_name', 'word', 'number', 'string', 'string_content', 'raw_string', 'ansi_c_string', 'translated_string', 'concatenation', 'file_redirect', 'file_descriptor', 'comment']);
const NULL_REDIRECTIONS = new Set(['>', '>>', '>|', '&>', '&>>']);

export function analyzeCommand(command: readonly string[] | string, situation: AnalysisSituation): CommandAnalysis {
  const line = readCommandLine(command);
  const { confined, cwd } = situation;
  return {
    readOnly: cwd !== null && line.unknown === null && (confined ? isReadOnlyConfined(command, line, cwd) : isReadOnlyOnHost(command, cwd)),
    danger: dangerIn(line),
    unknown: line.unknown,
    key: commandKey(line),
    display: line.source,
  };
}

/** The allow_session key of a command, without judging it otherwise. */
export function keyOfCommand(command: readonly string[] | string): string {
  return commandKey(readCommandLine(command));
}

function isReadOnlyOnHost(command: readonly string[] | string, cwd: string): boolean {
  const argv = literalArgvOf(command);
  const files = argv === null ? null : readOnlyFileArguments(argv, false);
  return files !== null && !files.some((file) => mentionsOutsidePath(file, [cwd]));
}

function isReadOnlyConfined(command: readonly string[] | string, line: CommandLine, cwd: string): boolean {
  if (typeof command !== 'string') {
    // `bash -c '…'` / `bash -lc '…'` as argv: judge the script, nothing else about the shell
    const nested = command.length === 3 && (command[1] === '-c' || command[1] === '-lc') && line.scripts.length === 2 ? line.scripts[1] : null;
    if (nested !== null) return isReadOnlyConfined(nested, readCommandLine(nested), cwd);
  }
  const { script } = line;
  if (script.heredoc || script.expands || script.tilde || script.braces || script.substitutions > 0) return false;
  if (![...script.constructs].every((construct) => READ_ONLY_CONSTRUCTS.has(construct))) return false;
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
    for (const base of [...bases]) bases.push(canonicalizeInside([base], wordText(argv[1]), base).resolved);
  }
  return bases;
}

function isReadOnlyCommand(command: SimpleCommand, bases: readonly string[]): boolean {
  if (command.assignments.length > 0) return false;
  const files = readOnlyFileArguments(command.argv.map(wordText), true);
  if (files === null || files.some((file) => mentionsOutsidePath(file, bases))) return false;
  return command.redirections.every(({ operator, target }) => {
    if (NULL_REDIRECTIONS.has(operator)) return target === '/dev/null';
    if (operator === '>&' || operator === '<&') return /^(\d+|-)$/.test(target);
    if (operator === '<') return !mentionsOutsidePath(target, bases);
    return false;
  });
}

function dangerIn(line: CommandLine): string | null {
  if (line.scripts.some(forkBombIn)) return 'it is a fork bomb';
  for (const { argv, redirections } of line.invocations) {
    const danger = dangerOf(argv, redirections);
    if (danger) return danger;
  }
  return null;
}
