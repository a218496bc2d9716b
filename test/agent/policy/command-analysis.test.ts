import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analyzeCommand, analyzeCommand as analyzeCommandIn, keyOfCommand } from '../../../src/agent/policy/command-analysis.ts';
import { isCatastrophicTarget } from '../../../src/agent/policy/dangerous-commands.ts';
import { loadBashParser } from '../../../src/agent/policy/bash-parser.ts';

await loadBashParser();

const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-analysis-')));
mkdirSync(join(workspace, 'src'));
writeFileSync(join(workspace, 'package.json'), '{}');
symlinkSync('/', join(workspace, 'rootlink'));
after(() => rmSync(workspace, { recursive: true, force: true }));
const confined = { confined: true, cwd: workspace };
const host = { confined: false, cwd: workspace };

const READ_ONLY: (string | string[])[] = [
  'ls',
  'ls -la src',
  ['ls', '-la'],
  'pwd',
  'cat package.json',
  'head -n 20 src/index.ts',
  'tail -n 5 log.txt',
  'wc -l src/*.ts',
  'grep -rn "TODO" src',
  'rg -n foo src',
  'find . -name "*.ts" -type f',
  'git status',
  'git log --oneline -5',
  'git diff HEAD~1 -- src',
  'git show HEAD:package.json',
  'git branch -a',
  'git tag -l "v*"',
  'echo hello world',
  'cat a.txt | grep foo | wc -l',
  'cd src && ls',
  'ls 2>&1',
  'grep -r x . 2>/dev/null',
  'sort names.txt | uniq -c',
  'ls; pwd',
  'jq .name package.json',
  'diff a.txt b.txt',
  'stat -c %s file',
  'wc -l < input.txt',
  'sort -S 64K -k 2 names.txt',
  'uniq -c in.txt',
  'head -5 a.txt',
  'date +%Y',
];

const ASK: (string | string[])[] = [
  'npm test',
  'rm -rf build',
  'echo hi > out.txt',
  'echo hi >> out.txt',
  'cat a | tee b',
  'find . -name "*.o" -delete',
  'find . -exec rm {} \\;',
  'rg --pre ./decompress foo',
  'git commit -m "msg"',
  'git -c core.pager=evil log',
  'git diff --output=patch.txt',
  'git grep -Ovim TODO',
  'git log --ext-diff',
  'git branch new-branch',
  'git branch -D old',
  'git push',
  'sort -o out.txt in.txt',
  'sort -uo out.txt in.txt',
  'uniq in.txt out.txt',
  'echo $(whoami)',
  'echo `whoami`',
  'cat <(ls)',
  'echo $HOME',
  'ls ~',
  'cat /etc/passwd',
  'cat ../../secret',
  'grep -f/etc/patterns x',
  'FOO=bar ls',
  'ls &',
  './ls',
  '/bin/ls',
  'sudo ls',
  'env ls',
  'python3 script.py',
  'sed -i s/a/b/ file',
  'awk "{print}" file',
  'xargs grep foo',
  'cat <<EOF\nhello\nEOF',
  "echo 'unterminated",
  'date -s "2020-01-01"',
  'tree -o out.txt',
  ['bash', '-lc', 'make'],
  ['touch', 'x'],
  // the issue 9 reproductions
  "echo $'\\' '; id > PWNED #'",
  "printf -v 'a[$(id > PWNED)]' %s x",
  "test -v 'a[$(id > PWNED)]'",
  "[ -v 'a[$(id > PWNED)]' ]",
  "find . -maxdepth 0 {-exec,} sh -c 'id > PWNED' \\;",
  'cat {/,}proc/1/environ',
  'cat {/,}etc/agentd/token',
  'ps eww -p 1',
  'ps -o args= -p 1',
  'sort --outp=F in.txt',
  'sort -S 64K --compress-prog=sh in.txt',
  "git grep --no-index --open-files-in='id > PWNED;' b",
  'git grep -iOvim TODO',
  'git log --format=%G?',
  'git show --textc HEAD',
  'uniq -- in.txt -OUT',
  'file -Cm m',
  'file -m m x',
  'date --se=2020-01-01',
  'date 01010000',
  'cat rootlink/proc/1/environ',
  'ls rootlink/',
  'cd rootlink && cat proc/1/environ',
  'grep -R token .',
  'rg -L token',
  'rg --pre=./x token',
  'find -L . -name x',
  'tail -f log',
  'ls --colo=always',
  'echo {1..3}',
  'cat a.txt <<< x',
  '(( a[$(id)] ))',
  'echo $((1+2))',
  'declare -p',
  'ls >(cat)',
];

const REFUSE: (string | string[])[] = [
  'rm -rf /',
  'rm -rf /*',
  'rm -fr ~',
  'rm -rf ~/',
  'rm -rf "$HOME"',
  'rm -r -f /usr',
  'rm --recursive --force /etc/',
  'sudo rm -rf --no-preserve-root /',
  ['rm', '-rf', '/'],
  ['/bin/rm', '-rf', '/home'],
  'mkfs.ext4 /dev/sdb1',
  'mkfs -t ext4 /dev/sda',
  'wipefs -a /dev/sda',
  'dd if=/dev/zero of=/dev/sda bs=1M',
  'dd if=image.iso of=/dev/nvme0n1',
  'echo garbage > /dev/sda',
  'cat file > /dev/mmcblk0',
  'cp image /dev/sdb',
  'shutdown -h now',
  'reboot',
  'sudo poweroff',
  'halt',
  'init 0',
  'systemctl reboot',
  ':(){ :|:& };:',
  'bomb() { bomb | bomb & }; bomb',
  'chmod -R 777 /',
  'chown -R nobody /',
  'chmod 000 /',
  'kill -9 -1',
  'kill -- -1',
  'ls && rm -rf /',
  'echo $(rm -rf /)',
  'bash -c "rm -rf ~"',
  ['bash', '-lc', 'rm -rf /'],
  ['sh', '-c', 'sudo mkfs.ext4 /dev/sda1'],
  'eval "rm -rf /"',
  'xargs rm -rf /',
  'timeout 5 rm -rf /usr/*',
  'env FOO=1 nice -n 5 rm -rf /',
  'find / -delete',
  'mv ~ /tmp/x',
  "bash <<<'rm -rf /'",
  'sh <<< "rm -rf ~"',
  'bash <<EOF\nrm -rf /\nEOF',
  "bash -O extglob -c 'rm -rf /'",
  "bash --norc -c 'rm -rf /'",
  "sh -e -c 'rm -rf /'",
  "bash -c -- 'rm -rf /'",
  'rm -rf {/,}',
  'rm -rf /{usr,tmp}',
  "xargs -n 1 sh -c 'rm -rf /'",
  "env -S 'rm -rf /'",
  'echo "$(rm -rf /)"',
  'cat <<EOF\n$(rm -rf /)\nEOF',
  'echo ${x:-$(rm -rf /)}',
  "eval 'rm -rf' /",
];

for (const command of READ_ONLY) {
  test(`read-only where commands run confined: ${JSON.stringify(command)}`, () => {
    const analysis = analyzeCommand(command, confined);
    assert.equal(analysis.danger, null);
    assert.equal(analysis.readOnly, true);
  });
}

for (const command of ASK) {
  test(`needs approval in both modes: ${JSON.stringify(command)}`, () => {
    for (const situation of [confined, host]) {
      const analysis = analyzeCommand(command, situation);
      assert.equal(analysis.danger, null);
      assert.equal(analysis.readOnly, false, JSON.stringify(situation));
    }
  });
}

for (const command of REFUSE) {
  test(`refused as dangerous: ${JSON.stringify(command)}`, () => {
    assert.notEqual(analyzeCommand(command, host).danger, null);
  });
}

test('on the host only one command of plain literal words from the table runs unattended', () => {
  for (const command of ['ls', 'ls -la src', ['ls', '-la'], 'cat package.json', "grep -rn 'TODO' src", 'head -n 20 "src/a b.ts"', "find . -name '*.ts' -type f", ['find', '.', '-name', '*.ts'], 'sort -S 64K names.txt', 'date +%Y']) {
    assert.equal(analyzeCommand(command, host).readOnly, true, JSON.stringify(command));
  }
  for (const command of ['git status', 'git log --oneline', 'cat a | wc', 'ls; pwd', 'cd src && ls', 'wc -l src/*.ts', 'ls 2>&1', 'ls > /dev/null', 'grep -rn "$x" src', 'ls ~', "cat 'a'b", 'ls \\x', 'jq . package.json', 'printenv', 'env', ['cat', '/etc/passwd'], ['cat', 'rootlink/etc/passwd'], ['bash', '-lc', 'ls'], 'time ls']) {
    assert.equal(analyzeCommand(command, host).readOnly, false, JSON.stringify(command));
  }
});

test('without a known working directory nothing is read-only', () => {
  assert.equal(analyzeCommand('ls', { confined: true, cwd: null }).readOnly, false);
});

test('harmless lookalikes are not refused', () => {
  const analyzeCommand = (command: string) => analyzeCommandIn(command, host);
  for (const command of ['rm -rf ./build', 'rm -rf /tmp/agentd-test/build', 'rm -f /', 'chmod -R 755 src', 'kill -9 12345', 'kill -1 4242', 'dd if=a of=b', 'echo x > /dev/null', 'fdisk -l', 'cat <<EOF > notes.md\nnever run rm -rf / like this\nEOF']) {
    assert.equal(analyzeCommand(command).danger, null, command);
  }
});

test('the allowance key is the first two words of a plain command, the whole command otherwise', () => {
  assert.equal(keyOfCommand('git commit -m "x"'), 'git commit');
  assert.equal(keyOfCommand(['git', 'commit', '-m', 'x']), 'git commit');
  assert.equal(keyOfCommand('make'), 'make');
  assert.equal(keyOfCommand('npm test -- --watch=false'), 'npm test');
  assert.equal(keyOfCommand('make && rm -rf dist'), 'make && rm -rf dist');
  assert.equal(keyOfCommand('npm test > log.txt'), 'npm test > log.txt');
  assert.equal(keyOfCommand('$TOOL run'), '$TOOL run');
  assert.equal(keyOfCommand('sudo apt install x'), 'sudo apt install x');
  assert.equal(keyOfCommand('bash -c "make"'), 'bash -c make');
  // approving one command never covers one that does more
  const distinct: [string | string[], string | string[]][] = [
    ["bash -c -- 'echo hello'", "bash -c -- 'id > PWNED'"],
    [['bash', '-lc', 'git commit -m x'], ['bash', '-lc', 'git commit -m x; id']],
    ['git -c color.ui=never --version', "git -c alias.x='!id' x"],
    ['git grep foo', 'git grep -Oid foo'],
    ['git grep foo', 'git grep --open-files-in=id foo'],
    ['git log', 'git log --ext-diff'],
    ['git commit -m x', 'git commit -c HEAD'],
    ['sort names.txt', 'sort --compress-prog=sh names.txt'],
    ['find . -name x', 'find . -exec id ;'],
    ['xargs echo', 'xargs sh -c id'],
    ['env FOO=1 make', 'env FOO=1 id'],
    ['python3 -m pytest', 'python3 -c "import os"'],
    ['node build.js', 'node -e "1"'],
    ['npm test', 'npm test --script-shell=./evil'],
    ['make build', 'make build --eval=x'],
    ['perl -v', 'perl -e 1'],
    ['tar tf x.tar', 'tar tf x.tar --to-command=id'],
    ['cargo build', 'cargo build --config=x'],
    // subcommands whose arguments are commands key on the whole command
    ['git bisect start', 'git bisect run sh -c id'],
    ['git submodule update', 'git submodule foreach id'],
    ['npm exec eslint', 'npm exec -- sh -c id'],
    ['npx eslint', 'npx eslint-but-evil'],
    ['npm run build', 'npm run deploy'],
    ['docker run alpine true', 'docker run -v /:/host alpine sh'],
    ['cargo run', 'cargo run --bin other'],
  ];
  for (const [approved, other] of distinct) {
    assert.notEqual(keyOfCommand(approved), keyOfCommand(other), `${JSON.stringify(approved)} vs ${JSON.stringify(other)}`);
  }
});

test('argv commands are displayed shell-quoted', () => {
  assert.equal(analyzeCommand(['git', 'commit', '-m', "it's done"], host).display, `git commit -m 'it'\\''s done'`);
  assert.equal(analyzeCommand('ls | wc', host).display, 'ls | wc');
});

test('catastrophic targets', () => {
  for (const target of ['/', '/*', '//', '/usr', '/usr/', '/usr/*', '/.', '~', '~/', '~root', '$HOME', '${HOME}/*']) {
    assert.equal(isCatastrophicTarget(target), true, target);
  }
  for (const target of ['build', './', '/usr/local/lib/x', '~/project/build', '/tmp/x/y']) {
    assert.equal(isCatastrophicTarget(target), false, target);
  }
});
