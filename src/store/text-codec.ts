/**
 * Free text as the databases can hold it. PostgreSQL rejects U+0000 in text, and both drivers
 * encode strings as UTF-8, where a lone surrogate becomes U+FFFD. So a string with either is
 * stored escaped, reversibly: the marker U+FDD0 (a noncharacter, reserved by Unicode for internal
 * use) opens the stored value, and inside it every NUL, lone surrogate and marker is written as
 * the marker plus four hex digits of its code unit. Everything else, including the common case of
 * a string needing no escape, is stored unchanged, so ordinary text costs one scan to write and
 * one character comparison to read.
 *
 * JSON columns need none of this: JSON.stringify already writes NUL and lone surrogates as
 * `\u` escapes.
 *
 * The escaped form survives being cut anywhere (an unfinished escape at the end is dropped), so
 * a prefix of a stored value read with SQL `substr` decodes to a prefix of the original.
 */

export const STORED_TEXT_MARKER = '\uFDD0';
const MARKER_CODE = 0xfdd0;
/** Stored characters one original code unit can take at most: the marker and four hex digits. */
export const MAX_ESCAPE_WIDTH = 5;

declare global {
  interface String {
    /** ES2024, in Node since 20; our TypeScript lib is ES2023. Native and far faster than a regex. */
    isWellFormed(): boolean;
  }
}

const NEEDS_ESCAPE = /[\0\uFDD0]|\p{Surrogate}/gu;
const ESCAPED = /\uFDD0([0-9a-f]{4})/g;
const UNFINISHED_ESCAPE = /\uFDD0[0-9a-f]{0,3}$/;

export function encodeStoredText(text: string): string {
  if (text.charCodeAt(0) !== MARKER_CODE && text.isWellFormed() && !text.includes('\0')) return text;
  return STORED_TEXT_MARKER + text.replace(NEEDS_ESCAPE, (unit) => STORED_TEXT_MARKER + unit.charCodeAt(0).toString(16).padStart(4, '0'));
}

export function encodeNullableStoredText(text: string | null): string | null {
  return text === null ? null : encodeStoredText(text);
}

export function decodeStoredText(stored: string): string {
  if (stored.charCodeAt(0) !== MARKER_CODE) return stored;
  return stored
    .slice(1)
    .replace(UNFINISHED_ESCAPE, '')
    .replace(ESCAPED, (_escape, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

export function decodeNullableStoredText(stored: string | null): string | null {
  return stored === null ? null : decodeStoredText(stored);
}
