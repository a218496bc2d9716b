/**
 * What a command really runs: the program behind wrappers (sudo, env, timeout, xargs, …), the
 * script of a nested shell (`bash -O extglob -c '…'`, `sh <<<'…'`, a heredoc fed to a shell) and
 * of `eval`.
 */
import path from 'node:path';
import type { Redirection } from './shell-syntax.ts';

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
  return path.posix.basename(word);
}

export function isWrapper(program: string): boolean {
  return Object.hasOwn(WRAPPERS, programName(program));
}

/**
 * The program invocations hidden in one argv: the argv itself and what each wrapper runs, plus the
 * scripts of nested shells and eval (as strings to be parsed).
 */
export function unwrap(argv: readonly string[], redirections: readonly Redirection[] = []): { invocations: (readonly string[])[]; scripts: string[] } {
  const invocations: (readonly string[])[] = [argv];
  const scripts: string[] = [];
  let current = argv;
  for (let hop = 0; hop < MAX_HOPS && current.length > 0; hop++) {
    const program = programName(current[0]);
    const nested = shellScriptOf(current, redirections);
    if (nested !== null) return { invocations, scripts: [...scripts, ...nested] };
    if (program === 'eval') return { invocations, scripts: [current.slice(1).join(' ')] };
    const wrapper = Object.hasOwn(WRAPPERS, program) ? WRAPPERS[program] : undefined;
    if (!wrapper) break;
    let index = 1;
    while (index < current.length && (current[index].startsWith('-') || (program === 'env' && current[index].includes('=')))) {
      const [name] = current[index].split('=');
      if (current[index] === '--') {
        index++;
        break;
      }
      if (program === 'env' && (name === '-S' || name === '--split-string')) {
        scripts.push(current[index].includes('=') ? current[index].slice(name.length + 1) : (current[index + 1] ?? ''));
      }
      index += wrapper.valued.has(current[index]) ? 2 : 1;
    }
    current = current.slice(index + wrapper.positional);
    invocations.push(current);
  }
  return { invocations, scripts };
}

const SHELL_VALUED_OPTIONS = new Set(['-O', '+O', '-o', '+o', '--rcfile', '--init-file']);

/**
 * The scripts a shell invocation runs that can be read: the `-c` string (after any options, as in
 * `bash -O extglob -c`, `bash --norc -c`, `sh -e -c`, `bash -c -- '…'`), or, when it reads its
 * script from standard input, a here-string or heredoc. null when the argv is not such a shell.
 */
export function shellScriptOf(argv: readonly string[], redirections: readonly Redirection[] = []): string[] | null {
  if (argv.length === 0 || !SHELLS.has(programName(argv[0]))) return null;
  let args = argv.slice(1);
  if (programName(argv[0]) === 'busybox') {
    if (!SHELLS.has(args[0] ?? '')) return null;
    args = args.slice(1);
  }
  let command = false;
  let readsStdin = false;
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    if (arg === '--' || arg === '-') {
      return command ? [args[index + 1] ?? ''] : stdinScripts(redirections, args.length > index + 1);
    }
    if (SHELL_VALUED_OPTIONS.has(arg)) index++;
    else if (/^[-+][A-Za-z]+$/.test(arg)) {
      command ||= arg.startsWith('-') && arg.includes('c');
      readsStdin ||= arg.startsWith('-') && arg.includes('s');
    } else if (!arg.startsWith('--')) return command ? [arg] : stdinScripts(redirections, !readsStdin);
  }
  return command ? null : stdinScripts(redirections, false);
}

/** `bash <<<'…'`, `sh <<EOF …`: the shell reads its script from these unless given a script file. */
function stdinScripts(redirections: readonly Redirection[], scriptFile: boolean): string[] | null {
  if (scriptFile) return null;
  const scripts = redirections.flatMap((redirection) => {
    if (redirection.operator === '<<<') return [redirection.target];
    if (redirection.body !== undefined) return [redirection.body];
    return [];
  });
  return scripts.length > 0 ? scripts : null;
}
