import { test } from 'node:test';
import assert from 'node:assert/strict';
import { analyzeCommand } from '../../../src/agent/policy/command-analysis.ts';
import { isCatastrophicTarget } from '../../../src/agent/policy/dangerous-commands.ts';

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
];

for (const command of READ_ONLY) {
  test(`read-only: ${JSON.stringify(command)}`, () => {
    const analysis = analyzeCommand(command);
    assert.equal(analysis.danger, null);
    assert.equal(analysis.readOnly, true);
  });
}

for (const command of ASK) {
  test(`needs approval: ${JSON.stringify(command)}`, () => {
    const analysis = analyzeCommand(command);
    assert.equal(analysis.danger, null);
    assert.equal(analysis.readOnly, false);
  });
}

for (const command of REFUSE) {
  test(`refused as dangerous: ${JSON.stringify(command)}`, () => {
    assert.notEqual(analyzeCommand(command).danger, null);
  });
}

test('harmless lookalikes are not refused', () => {
  for (const command of ['rm -rf ./build', 'rm -rf /tmp/agentd-test/build', 'rm -f /', 'chmod -R 755 src', 'kill -9 12345', 'kill -1 4242', 'dd if=a of=b', 'echo x > /dev/null', 'fdisk -l', 'cat <<EOF > notes.md\nnever run rm -rf / like this\nEOF']) {
    assert.equal(analyzeCommand(command).danger, null, command);
  }
});

test('the allowance prefix is the first two words of a simple command, the whole command otherwise', () => {
  assert.equal(analyzeCommand('git commit -m "x"').prefix, 'git commit');
  assert.equal(analyzeCommand(['git', 'commit', '-m', 'x']).prefix, 'git commit');
  assert.equal(analyzeCommand(['bash', '-lc', 'git commit -m x']).prefix, 'git commit');
  assert.equal(analyzeCommand('make').prefix, 'make');
  assert.equal(analyzeCommand('make && rm -rf dist').prefix, 'make && rm -rf dist');
  assert.equal(analyzeCommand('npm test > log.txt').prefix, 'npm test > log.txt');
  assert.equal(analyzeCommand('$TOOL run').prefix, '$TOOL run');
  assert.equal(analyzeCommand('sudo apt install x').prefix, 'sudo apt install x');
  assert.equal(analyzeCommand('bash -c "make"').prefix, 'bash -c "make"');
});

test('argv commands are displayed shell-quoted', () => {
  assert.equal(analyzeCommand(['git', 'commit', '-m', "it's done"]).display, `git commit -m 'it'\\''s done'`);
  assert.equal(analyzeCommand('ls | wc').display, 'ls | wc');
});

test('catastrophic targets', () => {
  for (const target of ['/', '/*', '//', '/usr', '/usr/', '/usr/*', '/.', '~', '~/', '~root', '$HOME', '${HOME}/*']) {
    assert.equal(isCatastrophicTarget(target), true, target);
  }
  for (const target of ['build', './', '/usr/local/lib/x', '~/project/build', '/tmp/x/y']) {
    assert.equal(isCatastrophicTarget(target), false, target);
  }
});
