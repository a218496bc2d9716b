/**
 * Commands that can destroy the machine rather than the project: they are refused in every mode,
 * yolo included, and no approval can unlock them. The checks look at one program invocation at a
 * time, after wrappers (sudo, env, xargs, nested `bash -c`) have been peeled off by the caller.
 */
import path from 'node:path';
import type { Redirection } from './shell-syntax.ts';

const WRITING_REDIRECTIONS = new Set(['>', '>>', '>|', '&>', '&>>', '<>']);
const HARMLESS_DEVICES = new Set(['/dev/null', '/dev/zero', '/dev/stdout', '/dev/stderr', '/dev/stdin', '/dev/tty', '/dev/random', '/dev/urandom']);
const DISK_TOOLS = new Set(['mke2fs', 'mkswap', 'wipefs', 'fdisk', 'sfdisk', 'cfdisk', 'parted', 'sgdisk', 'gdisk', 'blkdiscard']);
const POWER_COMMANDS = new Set(['shutdown', 'reboot', 'halt', 'poweroff']);
const SYSTEMCTL_POWER = new Set(['poweroff', 'reboot', 'halt', 'kexec', 'emergency', 'rescue']);
/** Programs that write to a device named as an operand (cat only reads one; `cat > /dev/sda` is a redirection). */
const DEVICE_WRITERS = new Set(['tee', 'cp', 'mv', 'install', 'ln', 'shred']);

/** `:(){ :|:& };:` and its renamed variants: a function that pipes into itself (`|`, or `|&` with stderr) in the background. */
const FORK_BOMB = /([A-Za-z_:][\w:.-]*)\s*\(\s*\)\s*\{[^}]*\1\s*\|&?\s*\1\s*&/;

export function forkBombIn(source: string): boolean {
  return FORK_BOMB.test(source);
}

/**
 * `/`, a top-level directory (`/usr`, `/home`, `/etc`, …), or a home directory (`~`, `~user`,
 * `$HOME`), optionally followed by `/*` (any number of them, `**`, a trailing slash).
 */
export function isCatastrophicTarget(target: string): boolean {
  // Stryker disable next-line Regex: without either `^`, a $HOME inside a word becomes ~ there, which changes neither the first character nor the number of components, all that is read below
  let normalized = path.posix.normalize(target.replace(/^\$\{HOME\}|^\$HOME/, '~'));
  // trailing slashes and trailing all-`*` components (`/usr/*/`, `/usr/**`) name the directory's whole content
  normalized = normalized.replace(/(\/\**)+$/, '') || '/';
  if (/^~[^/]*$/.test(normalized)) return true;
  return normalized.startsWith('/') && normalized.split('/').filter(Boolean).length <= 1;
}

/** A device node other than the harmless ones: writing to it can wipe a disk. */
function isDevicePath(target: string): boolean {
  return target.startsWith('/dev/') && !HARMLESS_DEVICES.has(target) && !target.startsWith('/dev/fd/') && !target.startsWith('/dev/shm/');
}

/** Why this single invocation can destroy the machine, or null. */
// Stryker disable next-line ArrayDeclaration: a junk entry in the default is a string, with no operator to match a writing redirection
export function dangerOf(argv: readonly string[], redirections: readonly Redirection[] = []): string | null {
  for (const redirection of redirections) {
    if (WRITING_REDIRECTIONS.has(redirection.operator) && isDevicePath(redirection.target)) {
      return `it writes directly to the device ${redirection.target}`;
    }
  }
  if (argv.length === 0) return null;
  const program = path.posix.basename(argv[0]);
  const args = argv.slice(1);
  const { flags, operands } = splitOptions(args);
  if (program === 'rm') {
    if (args.includes('--no-preserve-root')) return 'rm --no-preserve-root';
    const recursive = flags.some((flag) => flag === '--recursive' || /^-[^-]*[rR]/.test(flag));
    const target = operands.find(isCatastrophicTarget);
    if (recursive && target !== undefined) return `it recursively deletes ${target}`;
  }
  if (program === 'chmod' || program === 'chown' || program === 'chgrp') {
    const recursive = flags.some((flag) => flag === '--recursive' || /^-[^-]*R/.test(flag));
    const target = operands.find((operand) => operand === '/' || (recursive && isCatastrophicTarget(operand)));
    if (target !== undefined) return `${program} ${recursive ? '-R ' : ''}on ${target}`;
  }
  if (program === 'mv' && operands.slice(0, -1).some(isCatastrophicTarget)) return 'it moves a system or home directory away';
  if (program.startsWith('mkfs') || DISK_TOOLS.has(program)) {
    const listingOnly = args.length > 0 && args.every((arg) => arg === '-l' || arg === '--list');
    if (!listingOnly) return `${program} rewrites disks or filesystems`;
  }
  if (program === 'dd') {
    const output = args.find((arg) => arg.startsWith('of='));
    if (output && isDevicePath(output.slice(3))) return `dd writes to the device ${output.slice(3)}`;
  }
  if (DEVICE_WRITERS.has(program)) {
    const device = operands.find(isDevicePath);
    if (device) return `${program} writes to the device ${device}`;
  }
  if (program === 'shred' && operands.some(isCatastrophicTarget)) return 'shred on a system or home directory';
  if (POWER_COMMANDS.has(program)) return `${program} stops the machine`;
  if ((program === 'init' || program === 'telinit') && (operands.includes('0') || operands.includes('6'))) return `${program} changes the runlevel`;
  if (program === 'systemctl' && operands.some((operand) => SYSTEMCTL_POWER.has(operand))) return 'systemctl stops or restarts the machine';
  if (program === 'kill' && killsEverything(args)) return 'kill targets every process (or init)';
  if (program === 'find' && operands.some(isCatastrophicTarget) && args.some((arg) => arg === '-delete' || arg === '-exec' || arg === '-execdir')) {
    return 'find deletes or executes across a system or home directory';
  }
  return null;
}

/** A signal given as -NAME or -NUMBER: `kill -HUP 5`, `kill -9 -1`. */
// Stryker disable next-line Regex: skipping the signal word matters only when it is -1 (1 has no dash), and each weaker spelling still takes -1 for a signal; the `[^0-9]+` spelling, killed, shares the line
const SIGNAL_WORD = /^-([A-Z]+|[0-9]+)$/;

/** `kill -9 -1`, `kill -- -1`, `kill 1`: pid -1 is every process, pid 1 is init (wherever they stand after the signal, `--` included). */
function killsEverything(args: readonly string[]): boolean {
  const rest = [...args];
  if (rest[0] === '-s' || rest[0] === '-n') rest.splice(0, 2);
  else if (rest.length > 1 && SIGNAL_WORD.test(rest[0])) rest.shift();
  return rest.some((arg) => arg === '-1' || arg === '1');
}

function splitOptions(args: readonly string[]): { flags: string[]; operands: string[] } {
  // Stryker disable next-line ArrayDeclaration: a junk first flag starts with no dash and has no r or R after one, so no rule reads it
  const flags: string[] = [];
  // Stryker disable next-line ArrayDeclaration: a junk first operand is a relative name that is no catastrophic target, device, runlevel or power verb
  const operands: string[] = [];
  let optionsEnded = false;
  for (const arg of args) {
    if (!optionsEnded && arg === '--') optionsEnded = true;
    else if (!optionsEnded && arg.startsWith('-') && arg !== '-') flags.push(arg);
    else operands.push(arg);
  }
  return { flags, operands };
}
