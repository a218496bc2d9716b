/**
 * The text of approval requests. A human approves exactly what they were shown, so a prompt always
 * carries the tool name and the complete arguments (the whole command, the whole patch), never a
 * preview. JSON arguments are laid out one per line, multi-line strings verbatim, so a patch sent as
 * `{"patch": "…"}` reads the same as one sent as free text.
 */
import type { PathClassification } from '../../workspace/paths.ts';

export function toolApprovalPrompt(toolName: string, input: string, commandDisplay: string | null): string {
  const lines = [`The agent wants to run the tool "${toolName}".`];
  if (commandDisplay !== null) lines.push('', 'Command:', commandDisplay);
  lines.push('', 'Complete arguments:', formatArguments(input));
  return lines.join('\n');
}

export function rootAccessPrompt(toolName: string, input: string, paths: readonly PathClassification[]): string {
  const listed = paths.map((entry) => {
    const resolved = entry.resolved === entry.requested ? '' : ` (resolves to ${entry.resolved})`;
    return `- ${entry.requested}${resolved}, in the workspace root ${entry.root}`;
  });
  return [
    `The tool "${toolName}" wants to use paths outside the session's working directory:`,
    ...listed,
    '',
    'Complete arguments:',
    formatArguments(input),
  ].join('\n');
}

function formatArguments(input: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(input);
  } catch {
    return input;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return input;
  const entries = Object.entries(parsed);
  if (entries.length === 0) return '(none)';
  return entries
    .map(([key, value]) => (typeof value === 'string' && value.includes('\n') ? `${key}:\n${value}` : `${key}: ${JSON.stringify(value)}`))
    .join('\n');
}
