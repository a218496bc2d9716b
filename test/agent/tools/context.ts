/** Real temp workspaces and a tool context whose human is a scripted list of answers. */
import { mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { HumanDecision, HumanRequestKind, ToolContext } from '../../../src/agent/tools/types.ts';

export interface Workspace {
  root: string;
  cwd: string;
  cleanup(): void;
}

/** <tmp>/root is the allowed root, <tmp>/root/project the session cwd. */
export function makeWorkspace(): Workspace {
  const top = realpathSync(mkdtempSync(path.join(tmpdir(), 'agentd-tools-')));
  const root = path.join(top, 'root');
  const cwd = path.join(root, 'project');
  mkdirSync(cwd, { recursive: true });
  return { root, cwd, cleanup: () => rmSync(top, { recursive: true, force: true }) };
}

interface RecordedRequest {
  kind: HumanRequestKind;
  prompt: string;
  options: string[];
}

export interface TestContext extends ToolContext {
  streamed: string[];
  requests: RecordedRequest[];
}

export function makeContext(
  workspace: Workspace,
  overrides: { signal?: AbortSignal; answers?: HumanDecision[]; planMode?: boolean } = {},
): TestContext {
  const streamed: string[] = [];
  const requests: RecordedRequest[] = [];
  const answers = [...(overrides.answers ?? [])];
  return {
    cwd: workspace.cwd,
    roots: [workspace.root],
    signal: overrides.signal ?? new AbortController().signal,
    planMode: overrides.planMode ?? false,
    streamed,
    requests,
    onOutput: (chunk) => streamed.push(chunk),
    requestHuman: async (kind, prompt, options) => {
      requests.push({ kind, prompt, options });
      const answer = answers.shift();
      if (!answer) throw new Error('the test human has no answer left');
      return answer;
    },
  };
}
