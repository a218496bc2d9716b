/** Which search backend runs on the host: ripgrep when installed, the JavaScript fallback otherwise. */
import type { SearchBackend } from './backend.ts';
import { javascriptSearch } from './javascript-search.ts';
import { createRipgrepSearch, findOnPath } from './ripgrep-search.ts';

export interface SearchToolOptions {
  /**
   * Path of the ripgrep executable; null forces the JavaScript fallback. When omitted, `rg` is
   * looked up on PATH once, at creation.
   */
  ripgrepPath?: string | null;
  /** how long one search may take before ripgrep is killed or the fallback gives up */
  timeoutMs?: number;
}

/** The backend and its name; exported so the choice itself can be tested. */
export function chooseSearchBackend(options: SearchToolOptions = {}): { name: 'ripgrep' | 'javascript'; backend: SearchBackend } {
  const ripgrep = options.ripgrepPath === undefined ? findOnPath('rg', process.env.PATH) : options.ripgrepPath;
  return ripgrep ? { name: 'ripgrep', backend: createRipgrepSearch(ripgrep) } : { name: 'javascript', backend: javascriptSearch };
}
