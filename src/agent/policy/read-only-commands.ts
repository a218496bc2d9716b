/**
 * Whether one program invocation only reads, judged from its argv against the table in
 * read-only-programs.ts, and whether the files it names stay inside the session directory once
 * symlinks are followed. A program qualifies only by its bare name (never `./ls`, which could be
 * anything).
 */
import { canonicalizeInside } from '../../workspace/paths.ts';
import { READ_ONLY_PROGRAMS, type ProgramOptions } from './read-only-programs.ts';

export const READ_ONLY_PROGRAM_NAMES = [...Object.keys(READ_ONLY_PROGRAMS), 'git'];

/**
 * The words of a read-only invocation that may name files (operands and option values), or null
 * when the invocation is not read-only. `confined`: unattended commands run confined, which lets
 * git, jq, printenv, env and cd in too.
 */
export function readOnlyFileArguments(argv: readonly string[], confined: boolean): string[] | null {
  const [program, ...args] = argv;
  // Stryker disable next-line ConditionalExpression: `false` is equivalent (no table entry is named "undefined": an empty argv finds no options and is refused below); its `true` twin, killed, shares the line
  if (program === undefined) return null;
  if (program === 'git') return confined ? gitFileArguments(args) : null;
  const options = Object.hasOwn(READ_ONLY_PROGRAMS, program) ? READ_ONLY_PROGRAMS[program] : undefined;
  if (options === undefined || (options.confinedOnly && !confined)) return null;
  if (options.ignoresArguments) return [];
  return parseArguments(args, options);
}

function parseArguments(args: readonly string[], options: ProgramOptions): string[] | null {
  const files: string[] = [];
  const operands: string[] = [];
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    if (arg === '--') {
      operands.push(...args.slice(index + 1));
      break;
    }
    if (options.primaries && (arg === '(' || arg === ')' || arg === '!')) continue; // find's grouping words name no file
    if (options.primaries && Object.hasOwn(options.primaries, arg)) {
      const count = options.primaries[arg];
      if (index + count >= args.length) return null;
      files.push(...args.slice(index + 1, index + 1 + count));
      index += count;
    } else if (arg.startsWith('--')) {
      const equals = arg.indexOf('=');
      const name = equals === -1 ? arg : arg.slice(0, equals);
      if (equals === -1 && options.long?.includes(name)) continue;
      if (!options.longValued?.includes(name)) return null;
      const value = equals === -1 ? args[++index] : arg.slice(equals + 1);
      if (value === undefined) return null;
      files.push(value);
    } else if (arg.startsWith('-') && arg !== '-') {
      // find's own options (-P) come before its first path or primary; elsewhere a dash word is an unknown primary
      if (options.primaries && (operands.length > 0 || files.length > 0)) return null;
      const value = clusterValue(arg, options, () => args[++index]);
      if (value === null) return null;
      if (value !== undefined) files.push(value);
    } else operands.push(arg);
  }
  if (operands.length > (options.maxOperands ?? Infinity)) return null;
  // Stryker disable next-line OptionalChaining: the pattern was tested just before, on the same line; `?.` only satisfies the type checker
  if (options.operandPattern && !operands.every((operand) => options.operandPattern?.test(operand))) return null;
  return options.textOperands ? files : [...files, ...operands];
}

/**
 * Walks a short-option cluster (`-la`, `-n5`, `-Cm`) letter by letter: every letter must be
 * allowed; a valued letter takes the rest of the word or the next one. Returns that value,
 * undefined when there is none, or null when a letter is not allowed or a value is missing.
 */
function clusterValue(arg: string, options: ProgramOptions, nextWord: () => string | undefined): string | undefined | null {
  for (let at = 1; at < arg.length; at++) {
    const letter = arg[at];
    if (options.valued?.includes(letter)) return arg.slice(at + 1) || nextWord() || null;
    if (!options.flags?.includes(letter)) return null;
  }
  return undefined;
}

const GIT_READ_SUBCOMMANDS = new Set(['status', 'log', 'diff', 'show', 'blame', 'ls-files', 'ls-tree', 'rev-parse', 'describe', 'shortlog', 'cat-file', 'grep']);
const GIT_LISTING: Record<string, readonly string[]> = {
  branch: ['-a', '--all', '-r', '--remotes', '-v', '-vv', '--verbose', '--show-current', '--list'],
  remote: ['-v', '--verbose'],
  tag: ['-l', '--list'],
  stash: ['list'],
};
/** listing subcommands whose bare form writes: `git stash` alone is `git stash push` */
const GIT_WRITES_WHEN_BARE = new Set(['stash']);
/** long options (git accepts any unambiguous abbreviation) that write files or run programs */
const GIT_EXECUTING_OPTIONS = ['--output', '--ext-diff', '--textconv', '--filters', '--open-files-in-pager', '--show-signature', '--exec', '--upload-pack', '--paginate'];

/**
 * `git <read subcommand> …` with the subcommand first (global options such as -c could run
 * programs). Repository config can still run programs (diff.external, log.showSignature, …),
 * which is why git is read-only only where unattended commands run confined.
 */
function gitFileArguments([subcommand, ...rest]: readonly string[]): string[] | null {
  // Stryker disable next-line ConditionalExpression: `false` is equivalent (no subcommand or listing is named "undefined": a bare `git` is refused below); its `true` twin, killed, shares the line
  if (subcommand === undefined) return null;
  const executes = (arg: string) => {
    if (arg.includes('%G')) return true; // signature placeholders of --format run gpg
    if (arg.startsWith('--')) {
      const name = arg.split('=')[0];
      return name.length > 2 && GIT_EXECUTING_OPTIONS.some((option) => option.startsWith(name) || name.startsWith(option));
    }
    return arg.startsWith('-') && arg.includes('O'); // -O<pager> in any cluster (`git grep -iO…`)
  };
  if (rest.some(executes)) return null;
  const listing = GIT_LISTING[subcommand];
  if (!GIT_READ_SUBCOMMANDS.has(subcommand)) {
    if (!listing) return null;
    if (rest.length === 0 && GIT_WRITES_WHEN_BARE.has(subcommand)) return null;
    // `git tag -l 'v*'` lists by pattern; otherwise a positional argument would create something
    const patterns = subcommand === 'tag' && rest.some((arg) => listing.includes(arg));
    if (!rest.every((arg) => listing.includes(arg) || (patterns && !arg.startsWith('-')))) return null;
  }
  return rest.filter((arg) => !arg.startsWith('-'));
}

/**
 * Whether a word may name something outside the session directory: a path that, resolved from any
 * of `bases` (real paths) with every symlink followed, is not inside that base; or a `~` path.
 * `--name=value` words are judged by their value.
 */
export function mentionsOutsidePath(word: string, bases: readonly string[]): boolean {
  const value = word.startsWith('-') ? word.slice(word.indexOf('=') + 1) : word; // the whole word when it has no `=`
  if (value === '/dev/null') return false;
  if (value.startsWith('~') || value.includes('\0')) return true;
  return bases.some((base) => {
    try {
      return canonicalizeInside([base], value, base).location !== 'cwd';
    } catch {
      return true;
    }
  });
}
