/**
 * The programs that may run without asking, each with the exact options it may take. Options are
 * matched exactly: an unknown long option (including an abbreviation such as `--outp` for
 * `--output`) or a short option missing from a cluster's letters makes the command ask. Anything
 * that writes, runs another program, follows symlinks while recursing or reads the environment is
 * left out (`sort -o/-T/--compress-program`, `find -exec/-delete/-fprint/-L`, `grep -R`, `rg -L/--pre`,
 * `file -C/-m`, `date -s`, `tail -f`). printf, test, `[`, ps and declare-like builtins are left out
 * entirely: bash evaluates array subscripts in `printf -v` and `test -v`, and ps shows other
 * processes' environments and arguments.
 */

export interface ProgramOptions {
  /** short options without a value, as one string of letters */
  flags?: string;
  /** short options that take a value, glued (`-n5`) or as the next word */
  valued?: string;
  /** long options without a value */
  long?: readonly string[];
  /** long options that take a value, as `--name=value` or the next word */
  longValued?: readonly string[];
  /** find-style single-dash words (`-name x`): the allowed ones, with the number of values each takes */
  primaries?: Readonly<Record<string, number>>;
  /** at most this many operands (uniq's second operand is an output file) */
  maxOperands?: number;
  /** every operand must match this (`date +FORMAT`: any other operand sets the clock) */
  operandPattern?: RegExp;
  /** operands are text, not file names (echo, tr), so they are not checked as paths */
  textOperands?: boolean;
  /** every argument is ignored by the program */
  ignoresArguments?: boolean;
  /** only where unattended commands run confined: the program reads repository config or the environment */
  confinedOnly?: boolean;
}

const HASHSUM: ProgramOptions = { flags: 'bctwz', long: ['--binary', '--check', '--tag', '--text', '--quiet', '--status', '--strict', '--warn', '--zero'] };
const GREP: ProgramOptions = {
  flags: 'EFGPiyvwxcLlnhHoqsrabIUz0123456789',
  valued: 'efmABC',
  long: ['--extended-regexp', '--fixed-strings', '--basic-regexp', '--perl-regexp', '--ignore-case', '--no-ignore-case', '--invert-match', '--word-regexp', '--line-regexp', '--count', '--files-with-matches', '--files-without-match', '--line-number', '--no-filename', '--with-filename', '--only-matching', '--quiet', '--silent', '--no-messages', '--recursive', '--text', '--null', '--null-data', '--binary', '--color', '--colour'],
  longValued: ['--regexp', '--file', '--max-count', '--after-context', '--before-context', '--context', '--include', '--exclude', '--exclude-dir', '--label'],
};

export const READ_ONLY_PROGRAMS: Readonly<Record<string, ProgramOptions>> = {
  ls: {
    flags: 'aAbBcCdfFgGhHiklLmnNopqQrRsStuUvxX1Z',
    valued: 'IwT',
    long: ['--all', '--almost-all', '--human-readable', '--recursive', '--reverse', '--directory', '--classify', '--inode', '--size', '--numeric-uid-gid', '--color', '--group-directories-first', '--full-time', '--si'],
    longValued: ['--sort', '--time-style', '--ignore', '--hide', '--width', '--format', '--time', '--indicator-style', '--quoting-style', '--block-size'],
  },
  cat: { flags: 'AbeEnstTuv', long: ['--show-all', '--number-nonblank', '--number', '--squeeze-blank', '--show-ends', '--show-tabs', '--show-nonprinting'] },
  head: { flags: 'qvz0123456789', valued: 'nc', long: ['--quiet', '--silent', '--verbose', '--zero-terminated'], longValued: ['--lines', '--bytes'] },
  tail: { flags: 'qvz0123456789', valued: 'nc', long: ['--quiet', '--silent', '--verbose', '--zero-terminated'], longValued: ['--lines', '--bytes'] },
  wc: { flags: 'clmwL', long: ['--bytes', '--chars', '--lines', '--words', '--max-line-length'] },
  grep: GREP,
  egrep: GREP,
  fgrep: GREP,
  rg: {
    flags: 'iSsFwxvclnNHIuU0123456789',
    valued: 'egtTABCm',
    long: ['--ignore-case', '--smart-case', '--case-sensitive', '--fixed-strings', '--word-regexp', '--line-regexp', '--invert-match', '--count', '--files-with-matches', '--files-without-match', '--line-number', '--no-line-number', '--with-filename', '--no-filename', '--hidden', '--no-ignore', '--files', '--json', '--heading', '--no-heading', '--vimgrep', '--only-matching', '--multiline'],
    longValued: ['--regexp', '--glob', '--iglob', '--type', '--type-not', '--max-count', '--after-context', '--before-context', '--context', '--max-depth', '--color', '--sort'],
  },
  find: {
    flags: 'P',
    primaries: {
      '-name': 1, '-iname': 1, '-path': 1, '-ipath': 1, '-wholename': 1, '-regex': 1, '-iregex': 1, '-type': 1, '-xtype': 1,
      '-maxdepth': 1, '-mindepth': 1, '-size': 1, '-mtime': 1, '-mmin': 1, '-newer': 1, '-perm': 1, '-user': 1, '-group': 1,
      '-empty': 0, '-print': 0, '-print0': 0, '-printf': 1, '-ls': 0, '-prune': 0, '-depth': 0, '-not': 0, '-a': 0, '-o': 0,
      '-and': 0, '-or': 0, '-true': 0, '-false': 0, '-readable': 0, '-executable': 0, '-quit': 0,
    },
  },
  tree: { flags: 'adfipsuhgDFCnrtJ', valued: 'LIP', long: ['--dirsfirst', '--noreport'] },
  pwd: { flags: 'LP' },
  echo: { flags: 'neE', textOperands: true },
  true: { ignoresArguments: true },
  false: { ignoresArguments: true },
  stat: { flags: 'LftZ', valued: 'c', long: ['--dereference', '--terse', '--file-system'], longValued: ['--format', '--printf'] },
  file: { flags: 'bLhiNknrz', long: ['--brief', '--mime', '--mime-type', '--mime-encoding', '--dereference', '--no-dereference'] },
  du: { flags: 'achksmbx', valued: 'd', long: ['--human-readable', '--summarize', '--all', '--total', '--apparent-size'], longValued: ['--max-depth'] },
  df: { flags: 'hkiTlaP', long: ['--human-readable', '--inodes', '--print-type', '--local', '--all'] },
  basename: { flags: 'az', valued: 's', long: ['--multiple', '--zero'], longValued: ['--suffix'] },
  dirname: { flags: 'z', long: ['--zero'] },
  realpath: { flags: 'esmqLPz', long: ['--canonicalize-existing', '--canonicalize-missing', '--no-symlinks', '--quiet', '--strip', '--zero'], longValued: ['--relative-to', '--relative-base'] },
  readlink: { flags: 'femnqsvz', long: ['--canonicalize', '--canonicalize-existing', '--canonicalize-missing', '--no-newline', '--quiet', '--silent', '--verbose', '--zero'] },
  cut: { flags: 'snz', valued: 'bcdf', long: ['--complement', '--only-delimited', '--zero-terminated'], longValued: ['--bytes', '--characters', '--delimiter', '--fields', '--output-delimiter'] },
  tr: { flags: 'cdsCt', long: ['--complement', '--delete', '--squeeze-repeats', '--truncate-set1'], textOperands: true },
  nl: { flags: 'p', valued: 'bdfhilnsvw', longValued: ['--body-numbering', '--number-format', '--number-width', '--number-separator'] },
  sort: {
    flags: 'bdfgiMhnRrVcCmsuz',
    valued: 'ktS',
    long: ['--ignore-leading-blanks', '--dictionary-order', '--ignore-case', '--general-numeric-sort', '--ignore-nonprinting', '--month-sort', '--human-numeric-sort', '--numeric-sort', '--random-sort', '--reverse', '--version-sort', '--check', '--merge', '--stable', '--unique', '--zero-terminated'],
    longValued: ['--key', '--field-separator', '--buffer-size'],
  },
  uniq: { flags: 'cdDiuz', valued: 'fsw', long: ['--count', '--repeated', '--unique', '--ignore-case', '--zero-terminated'], longValued: ['--skip-fields', '--skip-chars', '--check-chars'], maxOperands: 1 },
  diff: {
    flags: 'uqrNaibwBEtTsy',
    valued: 'UC',
    long: ['--brief', '--recursive', '--new-file', '--text', '--ignore-case', '--ignore-all-space', '--ignore-space-change', '--ignore-blank-lines', '--side-by-side', '--report-identical-files', '--expand-tabs', '--color'],
    longValued: ['--unified', '--context', '--exclude'],
  },
  cmp: { flags: 'blsz', valued: 'in', long: ['--print-bytes', '--verbose', '--quiet', '--silent'], longValued: ['--ignore-initial', '--bytes'] },
  md5sum: HASHSUM,
  sha1sum: HASHSUM,
  sha256sum: HASHSUM,
  sha512sum: HASHSUM,
  which: { flags: 'a' },
  whoami: { maxOperands: 0 },
  id: { flags: 'ugGnrz', long: ['--user', '--group', '--groups', '--name', '--real', '--zero'] },
  uname: { flags: 'asnrvmpio', long: ['--all', '--kernel-name', '--nodename', '--kernel-release', '--kernel-version', '--machine', '--processor', '--hardware-platform', '--operating-system'] },
  date: { flags: 'uR', valued: 'd', long: ['--utc', '--universal', '--rfc-email'], longValued: ['--date'], maxOperands: 1, operandPattern: /^\+/, textOperands: true },
  hostname: { maxOperands: 0 },
  jq: { flags: 'rcSjensaC', long: ['--raw-output', '--compact-output', '--sort-keys', '--slurp', '--null-input', '--exit-status', '--join-output', '--tab', '--ascii-output'], confinedOnly: true },
  printenv: { confinedOnly: true, textOperands: true },
  env: { maxOperands: 0, confinedOnly: true },
  cd: { maxOperands: 1, operandPattern: /^[^-]/, confinedOnly: true },
};
