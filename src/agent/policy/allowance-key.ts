/**
 * What allow_session remembers for a shell command, so that approving one command never silently
 * covers another that does more.
 *
 * The key is the first two words (`git commit`) only when all of this holds:
 * - the command is one simple command whose words bash takes literally: no expansion,
 *   substitution, glob, brace, tilde, redirection, heredoc or variable assignment;
 * - the first word is a plain program name (no `/`) that does not run other programs by design:
 *   not a shell, an interpreter, a wrapper, nor find/xargs/ssh/tar/make and the like;
 * - the second word is a plain subcommand, not an option (`git -c …` never yields `git -c`), and
 *   not one that runs other commands (SUBCOMMANDS_THAT_RUN_COMMANDS: `git bisect run`,
 *   `git submodule foreach`, `npm exec`, `docker run`, …): allowing `git bisect start` must not
 *   let `git bisect run <anything>` through;
 * - no later word is an option that can make the program execute something: a long option that is,
 *   abbreviates, or extends one of EXECUTING_LONG_OPTIONS (`--exec`, `--pager`, `--output`,
 *   `--compress-program`, `--ext-diff`, …), or a short option cluster holding a letter listed
 *   for the program in EXECUTING_SHORT_OPTIONS (git: c, O, x).
 * Otherwise the key is the whole command, normalised (argv words shell-quoted for a simple
 * command, the trimmed text otherwise), and only that exact command is allowed again.
 */
import type { CommandLine } from './command-line.ts';
import { isWrapper, programName, SHELLS } from './nested-commands.ts';
import { isComputed } from './shell-syntax.ts';
import { quoteArgv } from './shell-words.ts';

const RUNS_OTHER_PROGRAMS = new Set([
  ...SHELLS, 'fish', 'csh', 'tcsh',
  'python', 'python2', 'python3', 'node', 'nodejs', 'deno', 'bun', 'perl', 'ruby', 'php', 'lua', 'luajit', 'Rscript', 'tclsh', 'wish',
  'awk', 'gawk', 'mawk', 'nawk', 'sed', 'jshell', 'irb', 'pwsh', 'expect', 'osascript',
  'eval', 'source', '.', 'su', 'runuser', 'unshare', 'nsenter', 'strace', 'ltrace', 'gdb', 'parallel', 'script',
  'find', 'xargs', 'ssh', 'scp', 'sftp', 'rsync', 'tar', 'zip', 'make', 'vim', 'vi', 'nvim', 'emacs', 'less', 'more', 'man',
  'npx', 'pnpx', 'bunx', 'uvx', 'pipx',
]);

/**
 * Subcommands whose arguments name the command or script they run: a two-word key would cover
 * every command they are given. (`npm test` and `cargo build` run the project's own code whatever
 * their arguments, so their two-word key widens nothing.)
 */
const SUBCOMMANDS_THAT_RUN_COMMANDS: Record<string, ReadonlySet<string>> = {
  git: new Set(['bisect', 'submodule', 'filter-branch', 'difftool', 'mergetool']),
  npm: new Set(['exec', 'x', 'run', 'run-script', 'rum', 'urn', 'explore']),
  yarn: new Set(['exec', 'run', 'dlx', 'node']),
  pnpm: new Set(['exec', 'dlx', 'run', 'x']),
  docker: new Set(['run', 'exec', 'create', 'compose', 'container']),
  podman: new Set(['run', 'exec', 'create', 'compose', 'container']),
  kubectl: new Set(['exec', 'run', 'debug', 'attach']),
  cargo: new Set(['run', 'install']),
  go: new Set(['run', 'generate', 'tool']),
  uv: new Set(['run', 'tool']),
  poetry: new Set(['run']),
  pipenv: new Set(['run']),
  dotnet: new Set(['run', 'exec']),
};

const EXECUTING_LONG_OPTIONS = [
  '--exec', '--eval', '--command', '--cmd', '--shell', '--pager', '--editor', '--config', '--upload-pack', '--receive-pack',
  '--template', '--compress-program', '--use-compress-program', '--to-command', '--checkpoint-action', '--rsh', '--pre',
  '--output', '--ext-diff', '--textconv', '--filters', '--open-files-in-pager', '--init-file', '--rcfile', '--require',
  '--import', '--loader', '--plugin', '--hook', '--script', '--interpreter', '--wrapper', '--makefile', '--file',
  '--prefix', '--global', '--unsafe-perm', '--node-options', '--run',
];
const EXECUTING_SHORT_OPTIONS: Record<string, string> = { git: 'cOx' };
const PLAIN_PROGRAM = /^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/;
const PLAIN_SUBCOMMAND = /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/;

export function commandKey(line: CommandLine): string {
  const argv = literalSimpleArgv(line);
  if (argv === null) return line.source.trim();
  const [program, subcommand, ...rest] = argv;
  const prefixed =
    subcommand !== undefined &&
    PLAIN_PROGRAM.test(program) &&
    !RUNS_OTHER_PROGRAMS.has(programName(program)) &&
    !isWrapper(program) &&
    PLAIN_SUBCOMMAND.test(subcommand) &&
    !runsCommands(program, subcommand) &&
    !rest.some((word) => injectsExecution(program, word));
  return prefixed ? `${program} ${subcommand}` : quoteArgv(argv);
}

function runsCommands(program: string, subcommand: string): boolean {
  const subcommands = Object.hasOwn(SUBCOMMANDS_THAT_RUN_COMMANDS, program) ? SUBCOMMANDS_THAT_RUN_COMMANDS[program] : undefined;
  return subcommands?.has(subcommand) ?? false;
}

/** The constructs of one simple command of words bash takes literally. */
const LITERAL_CONSTRUCTS = new Set(['program', 'command', 'command_name', 'word', 'number', 'string', 'string_content', 'raw_string', 'ansi_c_string', 'concatenation', 'comment']);

function literalSimpleArgv({ script, unknown }: CommandLine): string[] | null {
  const [command] = script.commands;
  const literal =
    unknown === null &&
    script.commands.length === 1 &&
    script.operators.every((operator) => operator === ';') &&
    [...script.constructs].every((construct) => LITERAL_CONSTRUCTS.has(construct)) &&
    !(script.expands || script.globs || script.braces || script.tilde || script.heredoc) &&
    command.assignments.length === 0 &&
    command.redirections.length === 0 &&
    !command.argv.some(isComputed);
  return literal ? command.argv : null;
}

function injectsExecution(program: string, word: string): boolean {
  if (word.startsWith('--')) {
    const name = word.split('=')[0];
    return name.length > 2 && EXECUTING_LONG_OPTIONS.some((option) => option.startsWith(name) || name.startsWith(option));
  }
  const letters = EXECUTING_SHORT_OPTIONS[programName(program)];
  return word.startsWith('-') && letters !== undefined && [...word.slice(1)].some((letter) => letters.includes(letter));
}
