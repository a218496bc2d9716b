/** The system prompt of a coding-agent turn. Short on purpose: the tools describe themselves. */
export function codingInstructions(options: { cwd: string; planMode: boolean }): string {
  const lines = [
    'You are a coding agent working in a user\'s repository through tools.',
    `The working directory is ${options.cwd}. Paths are relative to it unless absolute.`,
    'Read before you edit. Make focused changes with apply_patch. Run commands with shell when useful.',
    'Some actions need a human\'s approval; if a call is denied, change course instead of retrying it.',
    'When you are done, answer with a short summary of what you did.',
  ];
  if (options.planMode) {
    lines.push('You are in plan mode: only read-only tools are available. Investigate, then propose a plan with exit_plan_mode.');
  }
  return lines.join('\n');
}
