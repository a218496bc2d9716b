/** What a search backend receives and returns; ripgrep and the JavaScript fallback both fit it. */

export interface SearchRequest {
  pattern: string;
  /** absolute, canonical file or directory to search */
  target: string;
  glob?: string;
  maxResults: number;
  signal: AbortSignal;
}

export interface SearchMatch {
  /** absolute path of the matching file */
  file: string;
  line: number;
  text: string;
}

interface SearchResult {
  matches: SearchMatch[];
  /** more matches exist than maxResults */
  limitReached: boolean;
}

export type SearchBackend = (request: SearchRequest) => Promise<SearchResult>;

/** Match text longer than this is clipped; minified files would otherwise flood the model. */
export const MAX_MATCH_TEXT = 500;

export function clipMatchText(text: string): string {
  return text.length <= MAX_MATCH_TEXT ? text : `${text.slice(0, MAX_MATCH_TEXT)} […]`;
}
