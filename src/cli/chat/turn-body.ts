import type { CreateTurn } from '../../client/index.ts';
import { mentionedFiles } from './mentions.ts';

/**
 * The CreateTurn body of a line: `!command` asks the server to run the command through the
 * approval policy, without the model (CONTRACT.md §24); any other line is a prompt, with the files
 * its @path mentions attach and the chat's output schema. `notice` hears what the mentions say.
 */
export function turnBody(line: string, setup: { cwd: string; outputSchema?: Record<string, unknown> | null }, notice: (text: string) => void): CreateTurn {
  if (line.startsWith('!') && line.slice(1).trim() !== '') return { input: line.slice(1), shell: true };
  const { files, notes } = line.includes('@') ? mentionedFiles(line, setup.cwd) : { files: [], notes: [] };
  for (const note of notes) notice(note);
  const { outputSchema } = setup;
  return { input: line, ...(outputSchema ? { outputSchema } : {}), ...(files.length > 0 ? { files } : {}) };
}
