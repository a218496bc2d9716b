// Near misses of the dangerous-command table (dangerous-commands.ts, TOOLS-AND-POLICY): every
// spelling that destroys the machine is refused even under --yolo, and the look-alike that only
// touches a project is not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { decideToolCall, type PolicyContext } from '../../src/agent/policy/decide.ts';

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
