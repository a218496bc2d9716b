/**
 * Bounding of free text carried by events (SPEC.md §6, §8): at most EVENT_TEXT_LIMIT characters,
 * then an ellipsis, with a flag the client must honour. Characters are UTF-16 code units, the unit
 * of JavaScript string length, but a surrogate pair is never split in half.
 */

export const EVENT_TEXT_LIMIT = 16383;
export const ELLIPSIS = '…';

export interface BoundedText {
  text: string;
  truncated: boolean;
}

export function boundEventText(text: string): BoundedText {
  if (text.length <= EVENT_TEXT_LIMIT) return { text, truncated: false };
  return { text: cutAtCodeUnits(text, EVENT_TEXT_LIMIT) + ELLIPSIS, truncated: true };
}

/** The longest prefix of at most `limit` code units that does not end inside a surrogate pair. */
export function cutAtCodeUnits(text: string, limit: number): string {
  if (text.length <= limit) return text;
  let end = Math.max(0, limit);
  if (end > 0 && isHighSurrogate(text.charCodeAt(end - 1)) && isLowSurrogate(text.charCodeAt(end))) {
    end -= 1;
  }
  return text.slice(0, end);
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
