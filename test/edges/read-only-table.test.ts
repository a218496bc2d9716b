// The read-only table (read-only-programs.ts) written out a second time, independently, as the
// policy it is: every option named here runs unattended, every other letter and long option asks,
// and each program's operand rules hold at their edge. read-only-and-plan-mode.test.ts walks the
// table itself, so an entry dropped from the table would drop its own test there; here it fails.
// A change to the table is a change to what runs without asking, made in both places on purpose.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decideToolCall, type PolicyContext } from '../../src/agent/policy/decide.ts';
import { READ_ONLY_PROGRAMS } from '../../src/agent/policy/read-only-programs.ts';
import { mentionsOutsidePath, READ_ONLY_PROGRAM_NAMES, readOnlyFileArguments } from '../../src/agent/policy/read-only-commands.ts';
import { loadBashParser } from '../../src/agent/policy/bash-parser.ts';

await loadBashParser();

interface Pinned {
  flags?: string;
  valued?: string;
  /** long options, without their leading -- */
  long?: string;
  longValued?: string;
  /** find's primaries without their leading -, `=N` for those taking N values */
  primaries?: string;
  maxOperands?: number;
  operandPattern?: RegExp;
  textOperands?: true;
  ignoresArguments?: true;
  confinedOnly?: true;
}

const HASHSUM: Pinned = { flags: 'bctwz', long: 'binary check tag text quiet status strict warn zero' };
const GREP: Pinned = {
  flags: 'EFGPiyvwxcLlnhHoqsrabIUz0123456789',
  valued: 'efmABC',
  long: 'extended-regexp fixed-strings basic-regexp perl-regexp ignore-case no-ignore-case invert-match word-regexp line-regexp count files-with-matches files-without-match line-number no-filename with-filename only-matching quiet silent no-messages recursive text null null-data binary color colour',
  longValued: 'regexp file max-count after-context before-context context include exclude exclude-dir label',
};

const PINNED: Record<string, Pinned> = {
  ls: { flags: 'aAbBcCdfFgGhHiklLmnNopqQrRsStuUvxX1Z', valued: 'IwT', long: 'all almost-all human-readable recursive reverse directory classify inode size numeric-uid-gid color group-directories-first full-time si', longValued: 'sort time-style ignore hide width format time indicator-style quoting-style block-size' },
  cat: { flags: 'AbeEnstTuv', long: 'show-all number-nonblank number squeeze-blank show-ends show-tabs show-nonprinting' },
  head: { flags: 'qvz0123456789', valued: 'nc', long: 'quiet silent verbose zero-terminated', longValued: 'lines bytes' },
  tail: { flags: 'qvz0123456789', valued: 'nc', long: 'quiet silent verbose zero-terminated', longValued: 'lines bytes' },
  wc: { flags: 'clmwL', long: 'bytes chars lines words max-line-length' },
  grep: GREP,
  egrep: GREP,
  fgrep: GREP,
  rg: { flags: 'iSsFwxvclnNHIuU0123456789', valued: 'egtTABCm', long: 'ignore-case smart-case case-sensitive fixed-strings word-regexp line-regexp invert-match count files-with-matches files-without-match line-number no-line-number with-filename no-filename hidden no-ignore files json heading no-heading vimgrep only-matching multiline', longValued: 'regexp glob iglob type type-not max-count after-context before-context context max-depth color sort' },
  find: { flags: 'P', primaries: 'name=1 iname=1 path=1 ipath=1 wholename=1 regex=1 iregex=1 type=1 xtype=1 maxdepth=1 mindepth=1 size=1 mtime=1 mmin=1 newer=1 perm=1 user=1 group=1 empty print print0 printf=1 ls prune depth not a o and or true false readable executable quit' },
  tree: { flags: 'adfipsuhgDFCnrtJ', valued: 'LIP', long: 'dirsfirst noreport' },
  pwd: { flags: 'LP' },
  echo: { flags: 'neE', textOperands: true },
  'true': { ignoresArguments: true },
  'false': { ignoresArguments: true },
  stat: { flags: 'LftZ', valued: 'c', long: 'dereference terse file-system', longValued: 'format printf' },
  file: { flags: 'bLhiNknrz', long: 'brief mime mime-type mime-encoding dereference no-dereference' },
  du: { flags: 'achksmbx', valued: 'd', long: 'human-readable summarize all total apparent-size', longValued: 'max-depth' },
  df: { flags: 'hkiTlaP', long: 'human-readable inodes print-type local all' },
  basename: { flags: 'az', valued: 's', long: 'multiple zero', longValued: 'suffix' },
  dirname: { flags: 'z', long: 'zero' },
  realpath: { flags: 'esmqLPz', long: 'canonicalize-existing canonicalize-missing no-symlinks quiet strip zero', longValued: 'relative-to relative-base' },
  readlink: { flags: 'femnqsvz', long: 'canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent verbose zero' },
  cut: { flags: 'snz', valued: 'bcdf', long: 'complement only-delimited zero-terminated', longValued: 'bytes characters delimiter fields output-delimiter' },
  tr: { flags: 'cdsCt', long: 'complement delete squeeze-repeats truncate-set1', textOperands: true },
  nl: { flags: 'p', valued: 'bdfhilnsvw', longValued: 'body-numbering number-format number-width number-separator' },
  sort: { flags: 'bdfgiMhnRrVcCmsuz', valued: 'ktS', long: 'ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting month-sort human-numeric-sort numeric-sort random-sort reverse version-sort check merge stable unique zero-terminated', longValued: 'key field-separator buffer-size' },
  uniq: { flags: 'cdDiuz', valued: 'fsw', long: 'count repeated unique ignore-case zero-terminated', longValued: 'skip-fields skip-chars check-chars', maxOperands: 1 },
  diff: { flags: 'uqrNaibwBEtTsy', valued: 'UC', long: 'brief recursive new-file text ignore-case ignore-all-space ignore-space-change ignore-blank-lines side-by-side report-identical-files expand-tabs color', longValued: 'unified context exclude' },
  cmp: { flags: 'blsz', valued: 'in', long: 'print-bytes verbose quiet silent', longValued: 'ignore-initial bytes' },
  md5sum: HASHSUM,
  sha1sum: HASHSUM,
  sha256sum: HASHSUM,
  sha512sum: HASHSUM,
  which: { flags: 'a' },
  whoami: { maxOperands: 0 },
  id: { flags: 'ugGnrz', long: 'user group groups name real zero' },
  uname: { flags: 'asnrvmpio', long: 'all kernel-name nodename kernel-release kernel-version machine processor hardware-platform operating-system' },
  date: { flags: 'uR', valued: 'd', long: 'utc universal rfc-email', longValued: 'date', maxOperands: 1, operandPattern: /^\+/, textOperands: true },
  hostname: { maxOperands: 0 },
  jq: { flags: 'rcSjensaC', long: 'raw-output compact-output sort-keys slurp null-input exit-status join-output tab ascii-output', confinedOnly: true },
  printenv: { textOperands: true, confinedOnly: true },
  env: { maxOperands: 0, confinedOnly: true },
  cd: { maxOperands: 1, operandPattern: /^[^-]/, confinedOnly: true },
};

const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-edges-table-')));
after(() => rmSync(workspace, { recursive: true, force: true }));

function decide(command: string, confinedExecution = true) {
  const context: PolicyContext = { planMode: false, yolo: false, sessionAllowances: new Set(), paths: [{ requested: '.', resolved: workspace, location: 'cwd', root: workspace, exists: true }], confinedExecution };
  return decideToolCall({ name: 'shell', input: JSON.stringify({ command }), plan: { readOnly: false, paths: ['.'], command } }, context);
}
const runs = (command: string, confined = true) => assert.deepEqual(decide(command, confined), { action: 'run', unattended: true }, `${command} runs unattended${confined ? '' : ' unconfined'}`);
const asks = (command: string, confined = true) => assert.equal(decide(command, confined).action, 'ask', `${command} asks${confined ? '' : ' unconfined'}`);

const words = (list: string | undefined) => (list ? list.split(' ') : []);
const CHARACTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

test('the table names exactly the pinned programs', () => {
  assert.deepEqual(Object.keys(READ_ONLY_PROGRAMS).sort(), Object.keys(PINNED).sort());
  assert.deepEqual([...READ_ONLY_PROGRAM_NAMES].sort(), [...Object.keys(PINNED), 'git'].sort());
});

test('every pinned option runs: each letter alone, each valued letter glued and apart, each long option, each valued one with = and apart', () => {
  for (const [program, pinned] of Object.entries(PINNED)) {
    if (pinned.ignoresArguments || pinned.primaries || pinned.operandPattern) continue;
    for (const letter of pinned.flags ?? '') runs(`${program} -${letter}`);
    if (pinned.flags && pinned.flags.length > 1) runs(`${program} -${pinned.flags}`);
    for (const letter of pinned.valued ?? '') {
      runs(`${program} -${letter}1`);
      runs(`${program} -${letter} 1`);
      if (pinned.flags) runs(`${program} -${pinned.flags[0]}${letter} 1`);
      asks(`${program} -${letter}`); // its value missing
    }
    for (const option of words(pinned.long)) runs(`${program} --${option}`);
    for (const option of words(pinned.longValued)) {
      runs(`${program} --${option}=1`);
      runs(`${program} --${option} 1`);
      asks(`${program} --${option}`);
    }
  }
});

test('every other letter asks, alone and inside a cluster, and so does a long option one letter off', () => {
  for (const [program, pinned] of Object.entries(PINNED)) {
    if (pinned.ignoresArguments || pinned.primaries) continue;
    const known = new Set([...(pinned.flags ?? ''), ...(pinned.valued ?? '')]);
    for (const letter of CHARACTERS) {
      if (known.has(letter)) continue;
      asks(`${program} -${letter}`);
      if (pinned.flags) asks(`${program} -${pinned.flags[0]}${letter}`);
    }
    const longs = [...words(pinned.long), ...words(pinned.longValued)];
    for (const option of words(pinned.long)) {
      for (const nearMiss of [option.slice(0, -1), `${option}x`, option.toUpperCase()]) if (!longs.includes(nearMiss) && nearMiss !== '') asks(`${program} --${nearMiss}`);
      asks(`${program} --${option}=1`); // a flag given a value
    }
    for (const option of words(pinned.longValued)) if (!longs.includes(option.slice(0, -1))) asks(`${program} --${option.slice(0, -1)}=1`);
  }
});

test('operand limits, patterns and text operands at their edge', () => {
  runs('uniq a');
  asks('uniq a b'); // the second operand is an output file
  for (const program of ['whoami', 'hostname']) {
    runs(program);
    asks(`${program} x`);
  }
  runs('env');
  asks('env x');
  runs('date');
  runs('date +%s');
  asks('date +%s +%s');
  asks('date 0101');
  asks('date x+%s');
  runs('cd sub');
  asks('cd sub other');
  asks('cd -');
  asks('cd -- -x'); // an operand after -- that starts with a dash is an option to cd
  // date's own options, and its format operand is text even when it reads like a path out
  for (const command of ['date -u', 'date -R', 'date -uR', 'date -d yesterday', 'date -dyesterday', 'date --utc', 'date --universal', 'date --rfc-email', 'date --date=yesterday', 'date --date yesterday', "date '+/../../%s'"]) runs(command);
  for (const command of ['date -s x', 'date --set=x', 'date --ut', 'date -f file']) asks(command);
  // text operands are not paths: echo /etc and tr a-z A-Z run, cat /etc/passwd names a file outside
  runs('echo /etc/passwd');
  runs('tr /a /b');
  runs('printenv HOME /etc');
  asks('cat /etc/passwd');
  asks('wc ~/x');
  // a program that ignores its arguments runs with any
  runs('true --whatever /etc/passwd -x');
  runs('false -rf /');
});

test('programs that read repository config or the environment run only where commands run confined', () => {
  for (const command of ['jq -r .a', 'printenv', 'env', 'cd sub', 'git status']) {
    runs(command, true);
    asks(command, false);
  }
  for (const command of ['ls -la', 'cat a', 'grep -rn x .', 'date +%s']) runs(command, false);
});

test('find: each pinned primary runs with its values, and asks with one value missing', () => {
  const primaries = words(PINNED.find.primaries).map((entry) => entry.split('=')).map(([name, count]) => [name, Number(count ?? 0)] as const);
  assert.deepEqual(Object.entries(READ_ONLY_PROGRAMS.find.primaries!).sort(), primaries.map(([name, count]) => [`-${name}`, count]).sort());
  for (const [name, count] of primaries) {
    const values = Array.from({ length: count }, (_, index) => `v${index}`);
    runs(`find . -${name} ${values.join(' ')}`.trimEnd());
    if (count > 0) asks(`find . -${name}`);
  }
  runs('find -P . -name x');
  runs("find . '(' -name a -o -name b ')' '!' -type d");
  asks('find -H .');
  asks('find -L .');
  asks('find . -P');
  asks('find -name x -P');
  asks('find . -name a -fprint out');
  asks('find . -newermt x');
});

test('readOnlyFileArguments returns the words that may name files: option values and operands, never text', () => {
  assert.deepEqual(readOnlyFileArguments(['grep', '-e', 'pattern', '--file=list', '-f', 'more', 'a', 'b'], false), ['pattern', 'list', 'more', 'a', 'b']);
  assert.deepEqual(readOnlyFileArguments(['grep', '-epattern', '-A3', 'a'], false), ['pattern', '3', 'a']);
  assert.deepEqual(readOnlyFileArguments(['ls', '--', '-a', '--all'], false), ['-a', '--all']);
  assert.deepEqual(readOnlyFileArguments(['echo', '-n', '/etc/passwd'], false), []);
  assert.deepEqual(readOnlyFileArguments(['find', '.', '-newer', 'ref', '-name', 'x'], false), ['ref', 'x', '.']);
  assert.deepEqual(readOnlyFileArguments(['true', '/etc'], false), []);
  assert.deepEqual(readOnlyFileArguments(['find', '.', '(', '-name', 'a', ')', '!', '-type', 'd'], false), ['a', 'd', '.'], 'find\'s grouping words are neither files nor options');
  assert.deepEqual(readOnlyFileArguments(['cat', '-'], false), ['-']);
  assert.equal(readOnlyFileArguments([], false), null);
  assert.equal(readOnlyFileArguments(['git', 'status'], false), null);
  assert.deepEqual(readOnlyFileArguments(['git', 'log', '--oneline', 'src'], true), ['src']);
  assert.equal(readOnlyFileArguments(['constructor'], true), null, 'only the table\'s own programs, never an inherited name');
  assert.equal(readOnlyFileArguments(['toString'], true), null);
});

test('mentionsOutsidePath: inside the base or not, ~ and NUL always outside, --name=value judged by its value', () => {
  const base = workspace;
  assert.equal(mentionsOutsidePath('a/b', [base]), false);
  assert.equal(mentionsOutsidePath('.', [base]), false);
  assert.equal(mentionsOutsidePath('..', [base]), true);
  assert.equal(mentionsOutsidePath('/etc', [base]), true);
  assert.equal(mentionsOutsidePath('/dev/null', [base]), false);
  assert.equal(mentionsOutsidePath('/dev/null2', [base]), true);
  assert.equal(mentionsOutsidePath('~', [base]), true);
  assert.equal(mentionsOutsidePath('~/x', [base]), true);
  assert.equal(mentionsOutsidePath('a~', [base]), false);
  assert.equal(mentionsOutsidePath('a\0b', [base]), true);
  assert.equal(mentionsOutsidePath('--file=/etc/passwd', [base]), true);
  assert.equal(mentionsOutsidePath('--file=inside', [base]), false);
  assert.equal(mentionsOutsidePath('-f/etc', [base]), false, 'a glued short value is judged by the caller, not here');
  assert.equal(mentionsOutsidePath('x=/etc', [base]), false, 'only an option word is split at =: this one is a relative name as a whole');
  assert.equal(mentionsOutsidePath('-x=/etc', [base]), true);
  assert.equal(mentionsOutsidePath('../b/x', [join(base, 'a'), join(base, 'b')]), true, 'outside any one of the bases is outside');
  assert.equal(mentionsOutsidePath('x', [join(base, 'a'), join(base, 'b')]), false);
  assert.equal(mentionsOutsidePath('a', []), false);
  symlinkSync('loop', join(base, 'loop'));
  assert.equal(mentionsOutsidePath('loop/x', [base]), true, 'a name that cannot be resolved (a symlink loop) counts as outside');
});

test('git (confined only): each read subcommand and listing form runs; writing, executing and abbreviated options ask', () => {
  for (const subcommand of ['status', 'log', 'diff', 'show', 'blame', 'ls-files', 'ls-tree', 'rev-parse', 'describe', 'shortlog', 'cat-file', 'grep']) {
    runs(`git ${subcommand}`);
    asks(`git ${subcommand}`, false);
  }
  for (const command of ['git branch', 'git branch -a', 'git branch --all', 'git branch -r', 'git branch --remotes', 'git branch -v', 'git branch -vv', 'git branch --verbose', 'git branch --show-current', 'git branch --list', 'git remote', 'git remote -v', 'git remote --verbose', 'git tag', 'git tag -l', 'git tag --list', "git tag -l 'v*'", "git tag --list 'v1.*' 'v2.*'", 'git stash list']) runs(command);
  for (const command of ['git branch x', 'git branch -a x', 'git branch -D x', 'git remote add o u', 'git remote -v x', "git tag 'v*'", 'git tag v1', 'git tag -l -d v1', 'git stash', 'git stash pop', 'git stash list x', 'git push', 'git commit', 'git', 'git checkout .', 'git -C . status', 'git Status']) asks(command);
  // options that write files or run programs, in full, abbreviated to any unambiguous prefix, or longer
  for (const option of ['--output=x', '--outp=x', '--ext-diff', '--ext-d', '--textconv', '--textc', '--filters', '--filt', '--open-files-in-pager', '--open-files-in=vim', '--show-signature', '--show-sig', '--exec=x', '--exe=x', '--upload-pack=x', '--upload-p=x', '--paginate', '--pag', '--output-directory=x']) {
    asks(`git log ${option}`);
  }
  for (const command of ['git log -O', 'git grep -iO x', 'git grep -Ovim x', "git log --format='%G?'", "git log --pretty=format:%GS", 'git log --format=%GK']) asks(command);
  // look-alikes that do not write or execute
  // (a capital O in a pattern or a file name is no -O)
  for (const command of ['git log --oneline', 'git log --stat', 'git diff --name-only', "git log --format='%H %s'", 'git log -p', 'git grep -i x', 'git log --', 'git diff -- src', 'git log --o', 'git grep TODO', 'git show HEAD:OWNERS']) {
    if (command === 'git log --o') asks(command); // an abbreviation of --output (and others) is refused, too short to tell
    else runs(command);
  }
});
