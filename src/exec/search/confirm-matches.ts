/**
 * Confirms ripgrep's matches against the files themselves, opened race-free: a match is kept only
 * when its file, reached without following any symlink, has that line, and the line matches the
 * pattern (checked with RE2, whose syntax ripgrep shares, when the pattern compiles there). The
 * text shown is the line as read here, so nothing ripgrep read through a swapped-in symlink can
 * reach the model.
 */
import { constants } from 'node:fs';
import { RE2JS } from 're2js';
import { openExact } from '../../workspace/no-follow.ts';
import { clipMatchText, type SearchMatch } from './backend.ts';
import { readSearchableText } from './javascript-search.ts';

export function confirmMatches(candidates: SearchMatch[], pattern: string): SearchMatch[] {
  const regex = compileOrNull(pattern);
  const linesOf = new Map<string, string[] | null>();
  const confirmed: SearchMatch[] = [];
  for (const candidate of candidates) {
    if (!linesOf.has(candidate.file)) linesOf.set(candidate.file, readLines(candidate.file));
    const line = linesOf.get(candidate.file)?.[candidate.line - 1];
    if (line === undefined || (regex !== null && !regex.matcher(line).find())) continue;
    confirmed.push({ ...candidate, text: clipMatchText(line) });
  }
  return confirmed;
}

function readLines(file: string): string[] | null {
  try {
    return readSearchableText(openExact(file, constants.O_RDONLY | constants.O_NONBLOCK))?.split(/\r?\n/) ?? null;
  } catch {
    return null;
  }
}

function compileOrNull(pattern: string): RE2JS | null {
  try {
    return RE2JS.compile(pattern);
  } catch {
    return null;
  }
}
