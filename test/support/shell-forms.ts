/**
 * Every form of CONTRACT.md §21 (and of issue 39) that hides one command inside a shell line, as a
 * template: `wrap(command)` is a line that runs `command` once when bash runs it. Shared by the
 * policy matrix (test/agent/policy/shell-forms-matrix.test.ts) and the same forms run on a real shell
 * through a real turn (test/e2e/shell-forms.test.ts). Commands must hold no single quote.
 */
export interface ShellForm {
  name: string;
  wrap: (command: string) => string;
  /** bash needs what the test machine may lack (zsh, GNU parallel) or waits for input: judged, never run */
  policyOnly?: boolean;
}

export const SHELL_FORMS: readonly ShellForm[] = [
  { name: 'plain', wrap: (command) => command },
  { name: 'brace group', wrap: (command) => `{ ${command}; }` },
  { name: 'subshell', wrap: (command) => `( ${command} )` },
  { name: 'if … then', wrap: (command) => `if true; then ${command}; fi` },
  { name: 'elif', wrap: (command) => `if false; then :; elif true; then ${command}; fi` },
  { name: 'else', wrap: (command) => `if false; then :; else ${command}; fi` },
  { name: 'if condition', wrap: (command) => `if ${command}; then :; fi` },
  { name: 'while body', wrap: (command) => `while true; do ${command}; break; done` },
  { name: 'until body', wrap: (command) => `until false; do ${command}; break; done` },
  { name: 'for body', wrap: (command) => `for i in 1; do ${command}; done` },
  { name: 'arithmetic for body', wrap: (command) => `for ((i = 0; i < 1; i++)); do ${command}; done` },
  { name: 'select body', wrap: (command) => `select i in 1; do ${command}; break; done`, policyOnly: true },
  { name: 'case', wrap: (command) => `case x in x) ${command};; esac` },
  { name: 'function body and call', wrap: (command) => `f() { ${command}; }; f` },
  { name: 'function keyword', wrap: (command) => `function g { ${command}; }; g` },
  { name: 'negation', wrap: (command) => `! ${command}` },
  { name: 'and', wrap: (command) => `true && ${command}` },
  { name: 'or', wrap: (command) => `false || ${command}` },
  { name: 'sequence', wrap: (command) => `true; ${command}` },
  { name: 'newline', wrap: (command) => `true\n${command}` },
  { name: 'background', wrap: (command) => `${command} & wait` },
  { name: 'pipe', wrap: (command) => `true | ${command}` },
  { name: 'pipe with stderr', wrap: (command) => `true |& ${command}` },
  { name: 'redirected compound', wrap: (command) => `{ ${command}; } > /dev/null` },
  { name: 'command substitution', wrap: (command) => `echo $(${command})` },
  { name: 'quoted substitution', wrap: (command) => `echo "$(${command})"` },
  { name: 'backquotes', wrap: (command) => `echo \`${command}\`` },
  { name: 'substitution in an assignment', wrap: (command) => `x=$(${command})` },
  { name: 'substitution in export', wrap: (command) => `export x=$(${command})` },
  { name: 'arithmetic substitution', wrap: (command) => `echo $(( 1 + $(${command}; echo 1) ))` },
  { name: 'process substitution', wrap: (command) => `cat <(${command})` },
  { name: 'eval', wrap: (command) => `eval '${command}'` },
  { name: 'bash -c', wrap: (command) => `bash -c '${command}'` },
  { name: 'sh -c', wrap: (command) => `sh -c '${command}'` },
  { name: 'dash -c', wrap: (command) => `dash -c '${command}'` },
  { name: 'zsh -c', wrap: (command) => `zsh -c '${command}'`, policyOnly: true },
  { name: 'bash with options -c', wrap: (command) => `bash --norc -e -c '${command}'` },
  { name: 'script piped into sh', wrap: (command) => `echo '${command}' | sh` },
  { name: 'script piped into bash', wrap: (command) => `echo '${command}' | bash` },
  { name: 'here-string into bash', wrap: (command) => `bash <<< '${command}'` },
  { name: 'heredoc into sh', wrap: (command) => `sh <<EOF\n${command}\nEOF` },
  { name: 'quoted heredoc into bash', wrap: (command) => `bash <<'EOF'\n${command}\nEOF` },
  { name: 'heredoc piped into sh', wrap: (command) => `cat <<EOF | sh\n${command}\nEOF` },
  { name: 'heredoc into bash -', wrap: (command) => `bash - <<'EOF'\n${command}\nEOF` },
  { name: 'heredoc piped from cat - into sh', wrap: (command) => `cat - <<EOF | sh\n${command}\nEOF` },
  { name: 'su -c', wrap: (command) => `su -c '${command}'`, policyOnly: true },
  { name: 'su user -lc', wrap: (command) => `su root -lc '${command}'`, policyOnly: true },
  { name: 'runuser -c', wrap: (command) => `runuser -l root -c '${command}'`, policyOnly: true },
  { name: 'runuser -u', wrap: (command) => `runuser -u root -- ${command}`, policyOnly: true },
  { name: 'script -c', wrap: (command) => `script -q -c '${command}' /dev/null`, policyOnly: true },
  { name: 'xargs', wrap: (command) => `xargs ${command} < /dev/null` },
  { name: 'find -exec', wrap: (command) => `find . -maxdepth 0 -exec ${command} \\;` },
  { name: 'find -execdir', wrap: (command) => `find . -maxdepth 1 -name scratch.img -execdir ${command} \\;` },
  { name: 'find -ok', wrap: (command) => `find . -maxdepth 0 -ok ${command} \\;`, policyOnly: true },
  { name: 'find -okdir', wrap: (command) => `find . -maxdepth 0 -okdir ${command} \\;`, policyOnly: true },
  { name: 'parallel', wrap: (command) => `parallel ${command} ::: 1`, policyOnly: true },
  { name: 'coproc', wrap: (command) => `coproc ${command}; wait` },
  { name: 'env', wrap: (command) => `env A=1 ${command}` },
  { name: 'nice', wrap: (command) => `nice -n 5 ${command}` },
  { name: 'timeout', wrap: (command) => `timeout 30 ${command}` },
  { name: 'nohup', wrap: (command) => `nohup ${command}` },
  { name: 'command', wrap: (command) => `command ${command}` },
  { name: 'time', wrap: (command) => `time ${command}` },
  { name: 'sudo', wrap: (command) => `sudo -u root ${command}`, policyOnly: true },
  { name: 'nested wrappers', wrap: (command) => `env nice timeout 30 bash -c 'eval "${command}"'` },
];

/**
 * Lines whose program bash computes at run time: `program` and `args` make the command. Each is
 * unknown to the policy (CONTRACT.md §21).
 */
export const COMPUTED_PROGRAMS: readonly { name: string; line: (program: string, args: string) => string }[] = [
  { name: 'a command substitution as the program', line: (program, args) => `$(echo ${program}) ${args}` },
  { name: 'backquotes as the program', line: (program, args) => `\`echo ${program}\` ${args}` },
  { name: 'a variable as the program', line: (program, args) => `c=${program}; $c ${args}` },
  { name: 'a quoted variable as the program', line: (program, args) => `c=${program}; "$c" ${args}` },
  { name: 'a ${…} expansion as the program', line: (program, args) => `c=${program}; \${c} ${args}` },
  { name: 'a glob as the program', line: (program, args) => `/usr/*/${program.slice(0, -1)}? ${args}` },
  { name: 'a brace expansion as the program', line: (program, args) => `{${program},} ${args}` },
  { name: 'a computed program behind a wrapper', line: (program, args) => `c=${program}; env $c ${args}` },
  { name: 'eval of a variable', line: (program, args) => `c="${program} ${args}"; eval "$c"` },
  { name: 'bash -c of a variable', line: (program, args) => `c="${program} ${args}"; bash -c "$c"` },
  { name: 'a script piped from a program', line: (program, args) => `printf "%s\\n" "${program} ${args}" | sh` },
  { name: 'a here-string with an expansion into a shell', line: (program, args) => `c=${program}; sh <<< "$c ${args}"` },
  { name: 'parallel reading its commands', line: (program, args) => `echo ${program} ${args} | parallel` },
];
