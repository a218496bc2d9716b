/**
 * A Markdown summary of the approval policy, generated from the same lists the policy uses, so the
 * documentation (docs/TOOLS-AND-POLICY.md) and a server's --help or diagnostics cannot drift from it.
 */
import { READ_ONLY_PROGRAM_NAMES } from './read-only-commands.ts';
import { ROOT_ACCESS_OPTIONS, TOOL_APPROVAL_OPTIONS } from './decide.ts';

export function describePolicy(): string {
  return `Tool calls are judged in this order; the first rule that applies decides.

1. **Machine-destroying shell commands are refused** in every mode, yolo included: recursive
   rm/chmod/chown of \`/\`, a top-level directory or a home directory, \`--no-preserve-root\`,
   mkfs and partitioning tools, dd or redirection onto a device, shutdown/reboot/halt/poweroff,
   fork bombs, \`kill -1\`. Wrappers (sudo, env, timeout, xargs, nice, …), nested \`bash -c\`,
   \`eval\` and command substitutions are looked through.
2. **Paths outside every workspace root are refused**, after resolving symlinks and \`..\`.
3. **Plan mode allows read-only tools only**; anything else is refused with a message telling the
   model to present its plan with exit_plan_mode.
4. **Paths outside the session directory but inside a root ask \`root_access\`**
   (${ROOT_ACCESS_OPTIONS.join(', ')}), unless yolo is on.
5. **Read-only tools run** (read_file, list_dir, search, update_plan and the plan/question tools),
   and so do **provably read-only shell commands**: only the programs
   ${READ_ONLY_PROGRAM_NAMES.map((name) => `\`${name}\``).join(', ')}
   with the exact options of their table (no abbreviations, no unknown letters in a cluster; no
   find -exec/-delete, sort -o/--compress-program, rg --pre, grep -R, file -C, date -s, …), and
   every file argument inside the session directory after following symlinks. Where unattended
   commands run confined (bubblewrap), a script of them may use pipes, \`;\`, \`&&\`, \`||\`, quotes,
   globs, input redirection and output to /dev/null (git read commands, jq, printenv, env and cd
   too); no expansion, substitution, brace expansion, assignment or background \`&\`. Without
   confinement only one command of plain literal words runs unattended, executed without a shell;
   git always asks there, since repository config can run programs.
6. **Everything else asks \`tool_approval\`** (${TOOL_APPROVAL_OPTIONS.join(', ')}): apply_patch and
   every other shell command. The prompt shows the tool name and its complete arguments.
   yolo approves without asking. allow_session remembers the tool plus, for shell, the first two
   words of a plain literal command (\`shell:git commit\`) when no later word is an option that can
   make it execute something, or else the whole command (always for shells, interpreters,
   wrappers, find, xargs and the like), and later calls with the same key run without asking.`;
}
