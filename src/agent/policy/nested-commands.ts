/**
 * What a command really runs: the program behind wrappers (sudo, env, timeout, xargs, …), the
 * script of a nested shell (`bash -O extglob -c '…'`, `sh <<<'…'`, a heredoc fed to a shell) and
 * of `eval`.
 */
import path from 'node:path';
import { isComputed, wordText, type Redirection, type SimpleCommand } from './shell-syntax.ts';

export const SHELLS = new Set(['bash', 'sh', 'zsh', 'dash', 'ksh', 'mksh', 'ash', 'busybox']);
const MAX_HOPS = 5;

/** Options of wrapper programs that take a separate value (`sudo -u root`, `timeout -s KILL 5`). */
const WRAPPERS: Record<string, { valued: Set<string>; positional: number }> = {
  sudo: { valued: new Set(['-u', '-g', '-C', '-D', '-h', '-p', '-r', '-t', '-U', '-T', '--user', '--group', '--chdir']), positional: 0 },
  doas: { valued: new Set(['-u', '-C']), positional: 0 },
  env: { valued: new Set(['-u', '-C', '-S', '--unset', '--chdir', '--split-string']), positional: 0 },
  nice: { valued: new Set(['-n', '--adjustment']), positional: 0 },
  ionice: { valued: new Set(['-c', '-n', '-p', '-t']), positional: 0 },
  nohup: { valued: new Set(), positional: 0 },
  setsid: { valued: new Set(), positional: 0 },
  time: { valued: new Set(['-f', '-o']), positional: 0 },
  command: { valued: new Set(), positional: 0 },
  builtin: { valued: new Set(), positional: 0 },
  exec: { valued: new Set(['-a']), positional: 0 },
  stdbuf: { valued: new Set(['-i', '-o', '-e']), positional: 0 },
  timeout: { valued: new Set(['-s', '-k', '--signal', '--kill-after']), positional: 1 },
  xargs: { valued: new Set(['-I', '-i', '-n', '-P', '-L', '-l', '-s', '-d', '-E', '-e', '-a', '--max-args', '--max-procs', '--delimiter', '--arg-file', '--replace']), positional: 0 },
  flock: { valued: new Set(['-w', '-E']), positional: 1 },
  chroot: { valued: new Set(['--userspec', '--groups']), positional: 1 },
  watch: { valued: new Set(['-n', '-d', '--interval']), positional: 0 },
};

export function programName(word: string): string {
  return path.posix.basename(wordText(word));
}

export function isWrapper(program: string): boolean {
  return Object.hasOwn(WRAPPERS, programName(program));
}

export interface Unwrapped {
  /** the argv itself and what each wrapper runs, as bash makes the words */
  invocations: string[][];
  /** the scripts of nested shells and eval, to be parsed in turn */
  scripts: string[];
  /** why what this command runs is known only at run time, or null */
  unknown: string | null;
}

/** Options of GNU parallel that take a separate value. */
const PARALLEL_VALUED = new Set(['-j', '-N', '-n', '-S', '-L', '-l', '-P', '-I', '-a', '-d', '-C', '-E', '--jobs', '--arg-file', '--delimiter', '--colsep', '--sshlogin', '--joblog', '--results', '--tmpdir', '--workdir', '--timeout', '--retries', '--halt', '--max-args', '--max-lines', '--max-procs', '--replace']);
const FIND_EXECUTORS = new Set(['-exec', '-execdir', '-ok', '-okdir']);

/**
 * The program invocations hidden in one simple command: its argv and what each wrapper runs
 * (sudo, env, timeout, xargs, coproc, parallel, find -exec…), plus the scripts of nested shells
 * (`-c`, a here-string, a heredoc, a pipe from echo) and of eval.
 */
export function unwrap(command: Pick<SimpleCommand, 'argv' | 'redirections' | 'pipedFrom'>): Unwrapped {
  const result: Unwrapped = { invocations: [], scripts: [], unknown: null };
  let current = command.argv;
  for (let hop = 0; hop < MAX_HOPS && current.length > 0; hop++) {
    result.invocations.push(current.map(wordText));
    if (isComputed(current[0])) {
      result.unknown = `the program name is computed at run time (${wordText(current[0])})`;
      return result;
    }
    const program = programName(current[0]);
    const nested = shellScriptOf(current, command.redirections, command.pipedFrom) ?? runnerScript(program, current, () => stdinScripts(command.redirections, command.pipedFrom));
    if (nested !== null && !isArgv(nested)) return withScripts(result, nested);
    if (nested !== null) {
      current = nested.argv;
      continue;
    }
    if (program === 'eval') return withScripts(result, scriptOfWords(current.slice(1), 'eval'));
    if (program === 'find') return withFindExecs(result, current);
    const next = program === 'parallel' ? parallelCommand(current) : program === 'coproc' ? coprocCommand(current) : wrappedCommand(program, current, result.scripts);
    if (typeof next === 'string') {
      result.unknown = next;
      return result;
    }
    if (next === null) break;
    current = next;
  }
  return result;
}

function withScripts(result: Unwrapped, nested: string[] | string): Unwrapped {
  if (typeof nested === 'string') result.unknown = nested;
  else result.scripts.push(...nested);
  return result;
}

/** `find … -exec prog args ;` (and -execdir, -ok, -okdir): each program it runs, unwrapped in turn. */
function withFindExecs(result: Unwrapped, argv: readonly string[]): Unwrapped {
  for (let index = 1; index < argv.length; index++) {
    if (!FIND_EXECUTORS.has(wordText(argv[index]))) continue;
    let end = index + 1;
    while (end < argv.length && wordText(argv[end]) !== ';' && wordText(argv[end]) !== '+') end++;
    const inner = unwrap({ argv: argv.slice(index + 1, end), redirections: [] });
    result.invocations.push(...inner.invocations);
    result.scripts.push(...inner.scripts);
    result.unknown ??= inner.unknown;
    index = end;
  }
  return result;
}

/** `parallel [options] prog args ::: inputs`: prog args; without them parallel runs what it reads. */
function parallelCommand(argv: readonly string[]): string[] | string {
  let index = 1;
  while (index < argv.length && wordText(argv[index]).startsWith('-')) index += PARALLEL_VALUED.has(wordText(argv[index])) ? 2 : 1;
  const end = argv.findIndex((word, at) => at >= index && wordText(word).startsWith(':::'));
  const words = argv.slice(index, end === -1 ? argv.length : end);
  return words.length > 0 ? words : 'parallel runs commands it reads at run time';
}

/** `coproc prog args` runs prog; tree-sitter-bash does not read `coproc [NAME] { …; }`. */
function coprocCommand(argv: readonly string[]): string[] | string {
  const opens = (word: string | undefined) => word !== undefined && (wordText(word) === '{' || wordText(word) === '(');
  if (opens(argv[1]) || opens(argv[2])) return 'coproc with a compound command is not read by the parser';
  return argv.slice(1);
}

/** What a wrapper runs (its options taken off), or null when `argv` is no wrapper. */
function wrappedCommand(program: string, current: readonly string[], scripts: string[]): string[] | null {
  const wrapper = Object.hasOwn(WRAPPERS, program) ? WRAPPERS[program] : undefined;
  if (!wrapper) return null;
  let index = 1;
  while (index < current.length && (wordText(current[index]).startsWith('-') || (program === 'env' && current[index].includes('=')))) {
    const word = wordText(current[index]);
    const [name] = word.split('=');
    if (word === '--') {
      index++;
      break;
    }
    if (program === 'env' && (name === '-S' || name === '--split-string')) {
      scripts.push(word.includes('=') ? word.slice(name.length + 1) : wordText(current[index + 1] ?? ''));
    }
    index += wrapper.valued.has(word) ? 2 : 1;
  }
  return current.slice(index + wrapper.positional);
}

/** Options of the programs that run a command line through a shell (`su -c`, `runuser -c`, `script -c`) that take a value. */
const SU_VALUED = ['-c', '-s', '-g', '-G', '-w', '--command', '--session-command', '--shell', '--group', '--supp-group', '--whitelist-environment'];
const RUNNERS: Record<string, Set<string>> = {
  su: new Set(SU_VALUED),
  runuser: new Set([...SU_VALUED, '-u', '--user']),
  script: new Set(['-c', '--command', '-E', '--echo', '-I', '--log-in', '-O', '--log-out', '-B', '--log-io', '-T', '--log-timing', '-m', '--logging-format', '-o', '--output-limit']),
};

function isArgv(runs: string[] | string | { argv: string[] }): runs is { argv: string[] } {
  return typeof runs === 'object' && !Array.isArray(runs);
}

/**
 * What `su`, `runuser` and `script` run: the command line of `-c` (`--command`, `-lc`, also after
 * the user name, where su passes it to the shell), read as a shell script; `runuser -u USER cmd`
 * runs cmd itself; without either, the shell they start reads its script from standard input.
 * null when `program` is none of them.
 */
function runnerScript(program: string, argv: readonly string[], input: () => string[] | string | null): string[] | string | { argv: string[] } | null {
  const valued = Object.hasOwn(RUNNERS, program) ? RUNNERS[program] : undefined;
  if (!valued) return null;
  let user = false;
  let command: string[] | string | null = null;
  for (let index = 1; index < argv.length; index++) {
    const word = wordText(argv[index]);
    const [name, inline] = word.startsWith('--') ? [word.split('=')[0], word.includes('=') ? word.slice(word.indexOf('=') + 1) : null] : [word, null];
    // `-c CMD`, `-lc CMD`, `-cCMD`: getopt reads a cluster of flags up to the first that takes a value
    const cluster = /^-([A-Za-z]*?)c(.*)$/s.exec(word);
    const attached = cluster !== null && ![...cluster[1]].some((flag) => valued.has(`-${flag}`)) ? cluster[2] : null;
    if (name === '--command' || name === '--session-command' || attached !== null) {
      const text = inline ?? (attached || null);
      if (text === null) command ??= scriptOfWords(argv.slice(++index, index + 1), program);
      else command ??= isComputed(argv[index]) ? `${program} runs a script computed at run time` : [text];
      continue;
    }
    if ((name === '-s' || name === '--shell') && program !== 'script') {
      const shell = inline ?? wordText(argv[index + 1] ?? '');
      if (!SHELLS.has(programName(shell))) return `${program} runs its command with ${shell}, a shell agentd does not read`;
    }
    user ||= program === 'runuser' && command === null && (name === '-u' || name === '--user');
    if (user && word === '--') return { argv: argv.slice(index + 1) };
    if (user && !word.startsWith('-') && !valued.has(wordText(argv[index - 1]))) return { argv: argv.slice(index) };
    if (valued.has(name) && inline === null) index++;
  }
  return command ?? input();
}

const SHELL_VALUED_OPTIONS = new Set(['-O', '+O', '-o', '+o', '--rcfile', '--init-file']);

/**
 * The scripts a shell invocation runs that can be read: the `-c` string (after any options, as in
 * `bash -O extglob -c`, `bash --norc -c`, `sh -e -c`, `bash -c -- '…'`), or, when it reads its
 * script from standard input, a here-string, a heredoc or what `echo` pipes into it. null when the
 * argv is not such a shell; a string (the reason) when its script is known only at run time.
 */
function shellScriptOf(argv: readonly string[], redirections: readonly Redirection[] = [], pipedFrom?: SimpleCommand | null): string[] | string | null {
  if (argv.length === 0 || !SHELLS.has(programName(wordText(argv[0])))) return null;
  let args = argv.slice(1);
  if (programName(wordText(argv[0])) === 'busybox') {
    if (!SHELLS.has(wordText(args[0] ?? ''))) return null;
    args = args.slice(1);
  }
  let command = false;
  let readsStdin = false;
  const input = () => stdinScripts(redirections, pipedFrom);
  for (let index = 0; index < args.length; index++) {
    const arg = wordText(args[index]);
    if (arg === '--' || arg === '-') {
      if (command) return scriptOfWords(args.slice(index + 1, index + 2), 'the shell');
      return args.length > index + 1 ? null : input();
    }
    if (SHELL_VALUED_OPTIONS.has(arg)) index++;
    else if (/^[-+][A-Za-z]+$/.test(arg)) {
      command ||= arg.startsWith('-') && arg.includes('c');
      readsStdin ||= arg.startsWith('-') && arg.includes('s');
    } else if (!arg.startsWith('--')) {
      if (command) return scriptOfWords(args.slice(index, index + 1), 'the shell');
      return readsStdin ? input() : null;
    }
  }
  return command ? null : input();
}

/** The script of `eval words` or `bash -c word`: unknown when any of it is computed at run time. */
function scriptOfWords(words: readonly string[], runner: string): string[] | string {
  if (words.some(isComputed)) return `${runner} runs a script computed at run time`;
  return [words.join(' ')];
}

/**
 * `bash <<<'…'`, `sh <<EOF …`, `echo '…' | sh`: the script a shell reads from its standard input;
 * null when it reads nothing readable here (a terminal, a redirected file).
 */
function stdinScripts(redirections: readonly Redirection[], pipedFrom: SimpleCommand | null | undefined): string[] | string | null {
  const fed = redirections.filter((redirection) => redirection.operator === '<<<' || redirection.body !== undefined);
  if (fed.some((redirection) => redirection.computed)) return 'the shell reads a script computed at run time';
  if (fed.length > 0) return fed.map((redirection) => redirection.body ?? redirection.target);
  if (pipedFrom === undefined) return null;
  const printed = pipedFrom === null ? null : printedText(pipedFrom);
  return printed === null ? 'the shell reads a script from a pipe, known only at run time' : [printed];
}

/** What `echo words` or `cat <<EOF` prints, when that is fixed; null otherwise. */
function printedText(producer: SimpleCommand): string | null {
  const [program, ...args] = producer.argv;
  if (program === undefined || producer.argv.some(isComputed)) return null;
  if (program === 'echo') {
    const words = args[0] === '-n' || args[0] === '-E' ? args.slice(1) : args;
    return words.some((word) => word.startsWith('-e')) ? null : words.join(' ');
  }
  if (program === 'cat' && (args.length === 0 || (args.length === 1 && args[0] === '-'))) {
    const fed = producer.redirections.filter((redirection) => redirection.operator === '<<<' || redirection.body !== undefined);
    if (fed.length === 1 && !fed[0].computed) return fed[0].body ?? fed[0].target;
  }
  return null;
}
