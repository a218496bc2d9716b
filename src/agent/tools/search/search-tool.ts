/**
 * `search`: regex search over files through the boundary's executor: ripgrep inside the sandbox;
 * on the host ripgrep when installed and JavaScript otherwise.
 */
import { Type } from 'typebox';
import { hostExecutor } from '../../../exec/host-executor.ts';
import { functionTool } from '../arguments.ts';
import { executorOf } from '../executor-of.ts';
import { createProcessGroupRunner } from '../../../exec/process-group.ts';
import { timeLimit } from '../time-limit.ts';
import { displayPath, fileOperation, resolveToolPath } from '../tool-paths.ts';
import { success, type Tool } from '../types.ts';
import { chooseSearchBackend, type SearchToolOptions } from '../../../exec/search/choose-backend.ts';

export { chooseSearchBackend, type SearchToolOptions };

export const MAX_SEARCH_RESULTS = 200;
const SEARCH_TIME_LIMIT_MS = 30_000;

export interface SearchArgs {
  pattern: string;
  path: string;
  glob?: string;
}

export function createSearchTool(options: SearchToolOptions = {}): Tool<SearchArgs> {
  // A tool built on its own searches with the backend its options choose; in the server, the boundary's executor does.
  const own = hostExecutor({ runner: createProcessGroupRunner(), searchBackend: chooseSearchBackend(options).backend });
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
        result = await fileOperation(args.path, () =>
          executorOf(ctx, own).search({ pattern: args.pattern, path: target, glob: args.glob, maxMatches: MAX_SEARCH_RESULTS, signal: limit.signal }),
        );
      } catch (error) {
        limit.check();
        throw error;
      }
      if (result.matches.length === 0) return success('No matches.');
      const lines = result.matches.map((match) => `${displayPath(ctx.cwd, match.path)}:${match.line}:${match.text}`);
      if (result.truncated) lines.push(`[… stopped after ${MAX_SEARCH_RESULTS} matches; narrow the pattern, path or glob …]`);
      return success(lines.join('\n'), result.truncated);
    },
  });
}
