// Near misses of the dangerous-command table (dangerous-commands.ts, TOOLS-AND-POLICY): every
// spelling that destroys the machine is refused even under --yolo, and the look-alike that only
// touches a project is not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decideToolCall, type PolicyContext } from '../../src/agent/policy/decide.ts';
import { loadBashParser } from '../../src/agent/policy/bash-parser.ts';

await loadBashParser();

const yolo: PolicyContext = { planMode: false, yolo: true, sessionAllowances: new Set(), paths: [], confinedExecution: true };

function decisionOf(command: string | string[]) {
  return decideToolCall({ name: 'shell', input: JSON.stringify({ command }), plan: { readOnly: false, paths: [], command } }, yolo);
}

function assertRefused(command: string | string[]): void {
  const decision = decisionOf(command);
  assert.equal(decision.action, 'refuse', `${JSON.stringify(command)} must be refused`);
  assert.match(decision.action === 'refuse' ? decision.reason : '', /destroy the machine/, JSON.stringify(command));
}

function assertRuns(command: string | string[]): void {
  assert.equal(decisionOf(command).action, 'run', `${JSON.stringify(command)} is no danger to the machine`);
}

test('rm: every spelling of a recursive delete of /, a top-level directory or a home is refused', () => {
  for (const command of [
    'rm -r /', 'rm -R /', 'rm -rf /', 'rm -Rf ~', 'rm -fR ~', 'rm -fr /usr', 'rm -vRf /etc/', 'rm -Rv /*', 'rm -r /home/*',
    'rm --recursive /', 'rm -f --recursive /var', 'rm -r -- /', 'rm -r $HOME', 'rm -R ${HOME}', 'rm -r ~root', 'rm -r ~/',
    'rm --no-preserve-root -rf /', 'rm -rf ./build /', 'sudo rm -R /', "bash -c 'rm -R /'", 'env X=1 rm -Rf ~', 'rm -r //',
    'rm -r /usr/../etc', 'rm -r /./', '/bin/rm -R /',
  ]) assertRefused(command);
  assertRefused(['rm', '-R', '/']);
  assertRefused(['/usr/bin/rm', '-rf', '/root']);
});

test('rm: deleting inside a project, a home or below a top-level directory runs', () => {
  for (const command of ['rm -r ./build', 'rm -R build', 'rm -rf ~/project', 'rm -R /tmp/scratch', 'rm -rf /usr/local/lib', 'rm -f /etc', 'rm /', 'rm -- -r', 'rm -v -i -f ./x', 'rm -R $HOME/cache']) {
    assertRuns(command);
  }
});

test('rm: any short-option cluster holding r or R makes it recursive, and only those (property)', () => {
  const letter = fc.constantFrom('f', 'i', 'v', 'd', 'I', 'r', 'R');
  fc.assert(
    fc.property(fc.array(letter, { minLength: 1, maxLength: 6 }), fc.constantFrom('/', '~', '/etc', '$HOME', '/usr/'), (letters, target) => {
      const recursive = letters.includes('r') || letters.includes('R');
      const decision = decisionOf(`rm -${letters.join('')} ${target}`);
      assert.equal(decision.action, recursive ? 'refuse' : 'run', `rm -${letters.join('')} ${target}`);
    }),
    { numRuns: 300 },
  );
});

test('chmod, chown, chgrp, mv, shred and find at their edges', () => {
  for (const command of ['chmod -R 777 /', 'chmod 777 /', 'chown -R nobody /etc', 'chgrp -R staff ~', 'chmod --recursive 700 /usr', 'mv /etc /tmp/old', 'mv ~ /tmp/away', 'shred -u /', 'find / -delete', 'find ~ -exec rm {} +', 'find /usr -execdir rm {} ;']) {
    assertRefused(command);
  }
  for (const command of ['chmod 777 /etc', 'chmod -R 755 ./dist', 'chown -R nobody /srv/app', 'mv /tmp/a /etc', 'find / -name core', 'find . -delete', 'find ~/cache -delete']) {
    assertRuns(command);
  }
});

test('devices: writing to a disk is refused, the harmless devices are not', () => {
  for (const command of ['echo x > /dev/sda', 'echo x >> /dev/nvme0n1', 'cat img &> /dev/sda1', 'dd if=img of=/dev/sda', 'tee /dev/sdb < img', 'cp img /dev/vda', 'shred /dev/sda', 'mkfs.ext4 /dev/sda1', 'mkfs /dev/sda', 'wipefs -a /dev/sda', 'fdisk /dev/sda', 'blkdiscard /dev/nvme0n1']) {
    assertRefused(command);
  }
  for (const command of ['echo x > /dev/null', 'echo x > /dev/stderr', 'dd if=/dev/zero of=/dev/null count=1', 'tee /dev/stdout < a', 'cat /dev/sda', 'fdisk -l', 'echo x > /dev/shm/scratch', 'echo x > ./dev/sda', 'echo x > /devices/sda']) {
    assertRuns(command);
  }
});

test('power and every-process signals are refused; their neighbours run', () => {
  for (const command of ['shutdown -h now', 'reboot', 'halt', 'poweroff', 'systemctl reboot', 'systemctl poweroff', 'init 0', 'telinit 6', 'kill -9 -1', 'kill -- -1', 'kill 1', 'kill -s KILL -1', 'kill -KILL 1']) {
    assertRefused(command);
  }
  for (const command of ['systemctl status', 'systemctl restart nginx', 'init 3', 'kill -9 12345', 'kill 10', 'kill -- -12', 'kill -s KILL 11']) {
    assertRuns(command);
  }
});

// Every entry of each table, written out here from TOOLS-AND-POLICY rather than imported, so that
// an entry dropped from the module (or emptied) fails.
test('every disk tool, power command, device writer and writing redirection of the table', () => {
  for (const tool of ['mke2fs', 'mkswap', 'wipefs', 'fdisk', 'sfdisk', 'cfdisk', 'parted', 'sgdisk', 'gdisk', 'blkdiscard', 'mkfs', 'mkfs.xfs', 'mkfs.vfat']) {
    assertRefused(`${tool} /dev/sda`);
  }
  for (const command of ['shutdown', 'reboot', 'halt', 'poweroff']) assertRefused(command);
  for (const target of ['poweroff', 'reboot', 'halt', 'kexec', 'emergency', 'rescue']) assertRefused(`systemctl ${target}`);
  for (const writer of ['tee', 'cp', 'mv', 'install', 'ln', 'shred']) assertRefused(`${writer} a /dev/sda`);
  for (const operator of ['>', '>>', '>|', '&>', '&>>', '<>']) assertRefused(`echo x ${operator} /dev/sda`);
  assertRuns('cat < /dev/sda');
  for (const device of ['/dev/null', '/dev/zero', '/dev/stdout', '/dev/stderr', '/dev/stdin', '/dev/tty', '/dev/random', '/dev/urandom', '/dev/fd/1', '/dev/shm/x']) {
    assertRuns(`echo x > ${device}`);
    assertRuns(`tee ${device} < a`);
  }
  for (const device of ['/dev/sda', '/dev/nullx', '/dev/null/x', '/dev/zero0', '/dev/tty1', '/dev/mem', '/dev/fdx']) assertRefused(`echo x > ${device}`);
});

test('a redirection with no program, alone or around a compound command, still writes the device', () => {
  for (const command of ['> /dev/sda', 'x=1 > /dev/sda', '{ x=1; } > /dev/sda', '( : ) >> /dev/nvme0n1', 'if true; then :; fi > /dev/sda']) assertRefused(command);
  assertRuns('> /dev/null');
  assertRuns('{ x=1; } > out.txt');
});

test('disk tools only list with -l or --list alone', () => {
  for (const command of ['fdisk -l', 'fdisk --list', 'sfdisk -l', 'parted -l', 'fdisk -l --list']) assertRuns(command);
  for (const command of ['fdisk', 'fdisk -l /dev/sda -w always', 'sfdisk -l -f', 'wipefs -l -a']) assertRefused(command);
});

test('each refusal says why, naming what it would destroy', () => {
  const reasonOf = (command: string) => {
    const decision = decisionOf(command);
    assert.equal(decision.action, 'refuse', command);
    return decision.action === 'refuse' ? decision.reason : '';
  };
  const expected: Array<[string, string]> = [
    ['echo x > /dev/sda', 'it writes directly to the device /dev/sda'],
    ['rm --no-preserve-root x', 'rm --no-preserve-root'],
    ['rm -r /etc', 'it recursively deletes /etc'],
    ['chmod -R 777 /etc', 'chmod -R on /etc'],
    ['chown x /', 'chown on /'],
    ['mv /etc /x', 'it moves a system or home directory away'],
    ['mkfs.ext4 /dev/sda', 'mkfs.ext4 rewrites disks or filesystems'],
    ['dd if=a of=/dev/sda', 'dd writes to the device /dev/sda'],
    ['cp a /dev/sda', 'cp writes to the device /dev/sda'],
    ['shred -u ~', 'shred on a system or home directory'],
    ['reboot', 'reboot stops the machine'],
    ['init 0', 'init changes the runlevel'],
    ['systemctl halt', 'systemctl stops or restarts the machine'],
    ['kill -9 -1', 'kill targets every process (or init)'],
    ['find / -delete', 'find deletes or executes across a system or home directory'],
  ];
  for (const [command, why] of expected) assert.equal(reasonOf(command), `Refused: ${why}. Commands that can destroy the machine are never run.`, command);
});

test('catastrophic targets: top-level and home, never one level deeper', () => {
  for (const target of ['/', '/*', '//', '/usr', '/usr/', '/usr/*', '/usr/*/*', '/./usr', '/tmp/..', '~', '~/', '~/*', '~alice', '$HOME', '${HOME}', '$HOME/', '${HOME}/*', '~/*/*', '$HOME/*/*', '/*/*']) {
    assertRefused(`rm -rf ${target}`);
  }
  for (const target of ['/usr/lib', '/usr/*/x', '~/x', '~alice/x', '$HOME/x', '${HOME}/x', 'usr', './usr', '.', '*']) assertRuns(`rm -rf ${target}`);
});

test('kill: signal forms before -1 or 1, and pids that only look alike', () => {
  for (const command of ['kill -1', 'kill 1', 'kill -9 -1', 'kill -KILL -1', 'kill -s 9 -1', 'kill -n 9 1', 'kill -- -1', 'kill -9 -- -1', 'kill 5 1']) assertRefused(command);
  for (const command of ['kill -9 11', 'kill -- -11', 'kill 10 -12', 'kill -l', 'kill -s HUP 2', 'kill -9', 'kill']) assertRuns(command);
});

test('chmod, chown and chgrp: / itself always, other catastrophic targets only recursively', () => {
  for (const program of ['chmod', 'chown', 'chgrp']) {
    assertRefused(`${program} x /`);
    assertRefused(`${program} -R x /usr`);
    assertRefused(`${program} --recursive x ~`);
    assertRefused(`${program} -vR x /etc`);
    assertRuns(`${program} x /usr`);
    assertRuns(`${program} -v x /etc`);
    assertRuns(`${program} -R x /usr/local`);
  }
});

test('fork bombs, renamed, are refused; a function that only calls itself is not', () => {
  for (const command of [':(){ :|:& };:', 'bomb(){ bomb|bomb& }; bomb', 'f() { f | f & }; f', 'a.b(){ a.b|a.b & };a.b']) assertRefused(command);
  for (const command of ['f() { echo hi; }; f', 'f() { f; }; f', 'g() { f | f & }; g']) assertRuns(command);
});

// Added after the StrykerJS run of docs/RELIABILITY.md §9, one per surviving mutant it names.
test('near misses that mutation testing asked for', () => {
  // kill: a signal given as -s N, -n N or -N is not a pid
  for (const command of ['kill -s 1 5', 'kill -n 1 5', 'kill -1 5', 'kill -HUP 5', 'kill -- 5']) assertRuns(command);
  // after --, an operand that looks like an option is a file name
  assertRuns('rm -- -r /');
  // a long option that merely contains r or R is not recursion
  assertRuns('rm --interactive=never /');
  assertRuns('chown --from=Root:x y /etc');
  // mv and shred: any catastrophic source is enough, not all of them
  assertRefused('mv ./a /etc /tmp/x');
  assertRefused('shred ./a /');
  assertRefused('systemctl -i reboot now');
  // each program's rule applies to that program only
  for (const command of ['echo of=/dev/sda', 'echo /dev/sda', 'echo 0', 'echo reboot', 'echo 1', 'echo / -delete']) assertRuns(command);
  // a redirection with no command at all
  assertRuns('> out.txt');
  // kill: only a leading -N is a signal; a leading 1 is init even with another pid after it
  assertRefused('kill 1 5');
  // a lone - is an operand (stdin, or here a file named -), not an option: mv / - moves / away
  assertRefused('mv /etc -');
  // ~ names a home only at the start of a word: a backup file's trailing ~ is a file name
  for (const command of ['rm -rf /srv/app/cache~', 'rm -rf ./backup~', 'rm -rf a~b']) assertRuns(command);
  // a glob only at the end names the whole directory: /*/cache is one level below each top-level directory
  assertRuns('rm -rf /*/cache');
  // a trailing slash after the glob or a doubled star still names the whole directory's content
  for (const target of ['/usr/*/', '/usr/**', '/**', '~/*/', '~/**', '/etc/*/*/', '$HOME/**/']) assertRefused(`rm -rf ${target}`);
  for (const target of ['/usr/**/x', '/usr/x*', '/usr/*x', '~/x*/']) assertRuns(`rm -rf ${target}`);
  // fork bombs spaced differently
  for (const command of ['bomb () { bomb | bomb & }; bomb', 'f( ) { f|f& }; f', 'f(){ echo; f|f& }; f', ':(){ :|& :& };:']) assertRefused(command);
});
