import { CLEAR_COMMAND, COMPACT_COMMAND } from '../../agent/compaction.ts';
import type { DecodedAttachments } from '../../workspace/attachments.ts';

/** `/compact` or `/clear` when that is the whole input (surrounding blanks aside) and nothing is attached. */
export function contextCommandOf(input: string, attachments: DecodedAttachments): string | null {
  const command = input.trim();
  const attached = attachments.images.length + attachments.files.length;
  return attached === 0 && (command === COMPACT_COMMAND || command === CLEAR_COMMAND) ? command : null;
}

/** A turn that is a context command ends without an agent loop. */
export function isContextCommand(input: string, attachments: DecodedAttachments): boolean {
  return contextCommandOf(input, attachments) !== null;
}
