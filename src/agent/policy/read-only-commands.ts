/**
 * Commands that only read: they may run without asking. A command qualifies only when its program
 * is on this list by its bare name (never `./ls`, which could be anything) and none of its options
 * turn it into a writer or an executor (`find -delete`, `sort -o`, `rg --pre`, `git diff --output`).
 */

type ArgumentCheck = (args: string[]) => boolean;

const anyArguments: ArgumentCheck = () => true;
const noArguments: ArgumentCheck = (args) => args.length === 0;

/** none of the arguments is one of `options` or starts with `option=` for a long one */
function without(...options: string[]): ArgumentCheck {
  const matches = (arg: string, option: string) =>
    arg === option || (option.startsWith('--') && arg.startsWith(`${option}=`));
  return (args) => !args.some((arg) => options.some((option) => matches(arg, option)));
}

const FIND_ACTIONS = ['-exec', '-execdir', '-ok', '-okdir', '-delete', '-fprint', '-fprint0', '-fprintf', '-fls'];

/** `sort -o FILE` writes, also inside a cluster such as `-uo`; `--compress-program` runs a program. */
const sortCheck: ArgumentCheck = (args) =>
  !args.some((arg) => (/^-[^-]/.test(arg) && arg.includes('o')) || arg.startsWith('--output') || arg.startsWith('--compress-program'));

/** `uniq IN OUT` writes OUT. */
const uniqCheck: ArgumentCheck = (args) => args.filter((arg) => !arg.startsWith('-')).length <= 1;

const GIT_ALWAYS_READ = new Set(['status', 'log', 'diff', 'show', 'blame', 'ls-files', 'ls-tree', 'rev-parse', 'describe', 'shortlog', 'cat-file', 'grep']);
const GIT_LISTING_FLAGS: Record<string, Set<string>> = {
  branch: new Set(['-a', '--all', '-r', '--remotes', '-v', '-vv', '--verbose', '--show-current', '--list']),
  remote: new Set(['-v', '--verbose']),
  tag: new Set(['-l', '--list']),
  stash: new Set(['list']),
};
/** options that write a file or run a program; `-O<pager>` is matched as a prefix */
const GIT_FORBIDDEN = ['--output', '--ext-diff', '--open-files-in-pager', '--textconv'];

/** `git <subcommand>` with the subcommand first (global options such as -c could run programs). */
const gitCheck: ArgumentCheck = ([subcommand, ...rest]) => {
  if (subcommand === undefined) return false;
  const forbidden = (arg: string) =>
    arg.startsWith('-O') || GIT_FORBIDDEN.some((option) => arg === option || arg.startsWith(`${option}=`));
  if (rest.some(forbidden)) return false;
  if (GIT_ALWAYS_READ.has(subcommand)) return true;
  const listing = GIT_LISTING_FLAGS[subcommand];
  if (!listing) return false;
  // `git tag -l 'v*'` lists by pattern; otherwise a positional argument would create something.
  if (subcommand === 'tag' && rest.some((arg) => listing.has(arg))) return rest.every((arg) => listing.has(arg) || !arg.startsWith('-'));
  return rest.every((arg) => listing.has(arg));
};

const READ_ONLY_PROGRAMS: Record<string, ArgumentCheck> = {
  ls: anyArguments,
  cat: anyArguments,
  head: anyArguments,
  tail: anyArguments,
  wc: anyArguments,
  grep: anyArguments,
  egrep: anyArguments,
  fgrep: anyArguments,
  rg: without('--pre'),
  find: without(...FIND_ACTIONS),
  tree: without('-o'),
  pwd: anyArguments,
  cd: anyArguments,
  echo: anyArguments,
  printf: anyArguments,
  true: anyArguments,
  false: anyArguments,
  test: anyArguments,
  '[': anyArguments,
  stat: anyArguments,
  file: without('-C', '--compile'),
  du: anyArguments,
  df: anyArguments,
  basename: anyArguments,
  dirname: anyArguments,
  realpath: anyArguments,
  readlink: anyArguments,
  cut: anyArguments,
  tr: anyArguments,
  nl: anyArguments,
  sort: sortCheck,
  uniq: uniqCheck,
  diff: anyArguments,
  cmp: anyArguments,
  md5sum: anyArguments,
  sha1sum: anyArguments,
  sha256sum: anyArguments,
  sha512sum: anyArguments,
  jq: anyArguments,
  which: anyArguments,
  whoami: anyArguments,
  id: anyArguments,
  uname: anyArguments,
  date: without('-s', '--set'),
  ps: anyArguments,
  printenv: anyArguments,
  env: noArguments,
  hostname: noArguments,
  git: gitCheck,
};

export function isReadOnlyProgram(argv: readonly string[]): boolean {
  const [program, ...args] = argv;
  if (program === undefined || program.includes('/')) return false;
  const check = Object.hasOwn(READ_ONLY_PROGRAMS, program) ? READ_ONLY_PROGRAMS[program] : undefined;
  return check !== undefined && check(args);
}

export const READ_ONLY_PROGRAM_NAMES = Object.keys(READ_ONLY_PROGRAMS);

/**
 * Arguments that may name something outside the session directory: absolute paths (other than
 * /dev/null), home-relative paths and `..` segments. A read-only command with such an argument is
 * not provably confined to the workspace, so it is asked about instead of run.
 */
export function mentionsOutsidePath(arg: string): boolean {
  const value = arg.startsWith('-') && arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : arg;
  if (value === '/dev/null') return false;
  if (value.startsWith('/') || value.startsWith('~')) return true;
  if (value.split('/').includes('..')) return true;
  // an option with a path glued on, such as -f/etc/passwd
  return arg.startsWith('-') && !arg.includes('=') && arg.includes('/');
}
