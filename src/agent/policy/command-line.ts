/**
 * Everything a shell tool command runs, as one list: every simple command of the parsed line
 * (shell-syntax.ts), each unwrapped (nested-commands.ts), and the scripts of nested shells and eval
 * parsed and unwrapped in turn. The dangerous-command check, the permission rules and the
 * read-only judgement all read this list, so they all see the same programs.
 */
import { unwrap } from './nested-commands.ts';
import { emptyScript, parseShell, type Redirection, type ShellScript } from './shell-syntax.ts';
import { quoteArgv } from './shell-words.ts';

interface Invocation {
  /** the words as bash makes them (computed ones as written) */
  argv: string[];
  redirections: Redirection[];
}

export interface CommandLine {
  /** the command as a person would type it */
  source: string;
  /** the top-level script (an argv array is one simple command) */
  script: ShellScript;
  invocations: Invocation[];
  /** the text of every script read: the line and each nested script */
  scripts: string[];
  /** why what the line runs is known only at run time (CONTRACT.md §21's "unknown"), or null */
  unknown: string | null;
}

const MAX_NESTING = 5;
let last: { command: string; line: CommandLine } | null = null;

export function readCommandLine(command: readonly string[] | string): CommandLine {
  // decide.ts reads the same command for the rules and for the analysis: parse it once
  if (typeof command === 'string' && last?.command === command) return last.line;
  const source = typeof command === 'string' ? command : quoteArgv(command);
  const script = typeof command === 'string' ? parseShell(command) : argvScript(command);
  const line: CommandLine = { source, script, invocations: [], scripts: [source], unknown: null };
  collect(line, script, 0);
  if (typeof command === 'string') last = { command, line };
  return line;
}

function collect(line: CommandLine, script: ShellScript, depth: number): void {
  line.unknown ??= script.unknown;
  for (const command of script.commands) {
    const { invocations, scripts, unknown } = unwrap(command);
    line.unknown ??= unknown;
    // a command of assignments or redirections alone still opens its redirections' files
    for (const argv of invocations.length > 0 ? invocations : [[]]) line.invocations.push({ argv, redirections: command.redirections });
    for (const nested of scripts) {
      line.scripts.push(nested);
      if (depth >= MAX_NESTING) line.unknown ??= 'shells are nested too deeply to follow';
      else collect(line, parseShell(nested), depth + 1);
    }
  }
}

function argvScript(argv: readonly string[]): ShellScript {
  return { ...emptyScript(), commands: [{ argv: [...argv], assignments: [], redirections: [] }], constructs: new Set(['program', 'command']) };
}
