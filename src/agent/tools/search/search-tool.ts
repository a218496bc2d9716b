/** `search`: regex search over files, by ripgrep when installed and in JavaScript otherwise. */
import { PathError } from '../../../workspace/paths.ts';
import { Type } from 'typebox';
import { functionTool } from '../arguments.ts';
import { timeLimit } from '../time-limit.ts';
import { displayPath, resolveToolPath } from '../tool-paths.ts';
import { success, ToolError, type Tool } from '../types.ts';
import type { SearchBackend } from './backend.ts';
import { javascriptSearch } from './javascript-search.ts';
import { createRipgrepSearch, findOnPath } from './ripgrep-search.ts';

export const MAX_SEARCH_RESULTS = 200;

export interface SearchArgs {
  pattern: string;
  path: string;
  glob?: string;
}

export interface SearchToolOptions {
  /**
   * Path of the ripgrep executable; null forces the JavaScript fallback. When omitted, `rg` is
   * looked up on PATH once, at creation.
   */
  ripgrepPath?: string | null;
  /** how long one search may take before ripgrep is killed or the fallback gives up */
  timeoutMs?: number;
}

export const SEARCH_TIME_LIMIT_MS = 30_000;

/** Which backend the search tool will use, and why; exported so the choice itself can be tested. */
export function chooseSearchBackend(options: SearchToolOptions = {}): { name: 'ripgrep' | 'javascript'; backend: SearchBackend } {
  const ripgrep = options.ripgrepPath === undefined ? findOnPath('rg', process.env.PATH) : options.ripgrepPath;
  return ripgrep ? { name: 'ripgrep', backend: createRipgrepSearch(ripgrep) } : { name: 'javascript', backend: javascriptSearch };
}

export function createSearchTool(options: SearchToolOptions = {}): Tool<SearchArgs> {
  const { backend } = chooseSearchBackend(options);
  return functionTool({
    name: 'search',
    description:
      'Searches file contents for a regular expression and returns "path:line:text" lines ' +
      `(at most ${MAX_SEARCH_RESULTS}). Skips .git, node_modules and binary files. ` +
      'Optional path (file or directory, default the session cwd) and glob (e.g. "*.ts", "src/**/*.md", "!*.min.js").',
    arguments: Type.Object(
      {
        pattern: Type.String({ minLength: 1, description: 'regular expression; prefix (?i) for case-insensitive' }),
        path: Type.Optional(Type.String({ description: 'file or directory to search, relative to the session cwd' })),
        glob: Type.Optional(Type.String({ description: 'only search files matching this glob' })),
      },
      { additionalProperties: false },
    ),
    refine: ({ pattern, path, glob }): SearchArgs => ({ pattern, path: path || '.', ...(glob ? { glob } : {}) }),
    plan: (args) => ({ readOnly: true, paths: [args.path] }),
    async run(args, ctx) {
      const target = resolveToolPath(ctx, args.path);
      const limit = timeLimit(ctx.signal, 'the search', options.timeoutMs ?? SEARCH_TIME_LIMIT_MS);
      let result;
      try {
        result = await backend({ pattern: args.pattern, target, glob: args.glob, maxResults: MAX_SEARCH_RESULTS, signal: limit.signal });
      } catch (error) {
        limit.check();
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new ToolError(`${args.path} does not exist`);
        if (error instanceof PathError) throw new ToolError(error.message);
        throw error;
      }
      if (result.matches.length === 0) return success('No matches.');
      const lines = result.matches.map((match) => `${displayPath(ctx.cwd, match.file)}:${match.line}:${match.text}`);
      if (result.limitReached) lines.push(`[… stopped after ${MAX_SEARCH_RESULTS} matches; narrow the pattern, path or glob …]`);
      return success(lines.join('\n'), result.limitReached);
    },
  });
}
