/**
 * The set of tools a session offers: their specs for the model, and execution by name.
 * Execution is two steps so the approval policy can sit in between:
 *
 *   const prepared = registry.prepare({ name, input }, ctx);       // parse, plan, classify paths
 *   if (!prepared.ok) → send prepared.outcome to the model
 *   authorizeToolCall(prepared.call, { …, paths: prepared.call.paths }, requestHuman)
 *   const outcome = await registry.run(prepared.call, ctx);        // never throws for tool errors
 */
import type { Dialect, ToolSpec } from '../providers/types.ts';
import { PathError, type PathClassification } from '../../workspace/paths.ts';
import { classifyToolPath } from './tool-paths.ts';
import { createApplyPatchTool } from './apply-patch/apply-patch-tool.ts';
import { listDirTool } from './list-dir.ts';
import { truncateForModel } from '../../exec/output.ts';
import { askQuestionTool, enterPlanModeTool, exitPlanModeTool } from './plan-mode.ts';
import { readFileTool } from './read-file.ts';
import { createSearchTool, type SearchToolOptions } from './search/search-tool.ts';
import { createShellTool, type ShellToolOptions } from './shell.ts';
import { failure, ToolError, type Tool, type ToolContext, type ToolOutcome, type ToolPlan } from './types.ts';
import { descriptorOf } from '../providers/dialects.ts';
import { updatePlanTool } from './update-plan.ts';

export interface ToolRegistryOptions {
  /** apply_patch is a custom (freeform) tool where the dialect takes free text, a function tool elsewhere */
  dialect: Dialect;
  shell?: ShellToolOptions;
  search?: SearchToolOptions;
  /** tool names to leave out, e.g. the plan-mode tools for a child agent */
  exclude?: readonly string[];
  /** leave out every tool that executes (Tool.executes): a tenant without a sandbox runner */
  withoutExecutingTools?: boolean;
}

interface ToolCallRequest {
  name: string;
  /** JSON arguments for function tools, free text for custom tools */
  input: string;
}

export interface PreparedToolCall {
  name: string;
  input: string;
  args: unknown;
  plan: ToolPlan;
  /** one classification per plan path, in order; what the policy's `paths` expects */
  paths: PathClassification[];
}

type Preparation = { ok: true; call: PreparedToolCall } | { ok: false; outcome: ToolOutcome };

export interface ToolRegistry {
  /** the tools as the model sees them */
  readonly specs: ToolSpec[];
  has(name: string): boolean;
  prepare(request: ToolCallRequest, ctx: Pick<ToolContext, 'cwd' | 'roots' | 'executor'>): Preparation;
  run(call: PreparedToolCall, ctx: ToolContext): Promise<ToolOutcome>;
}

export function createToolRegistry(options: ToolRegistryOptions): ToolRegistry {
  const all: Tool<any>[] = [
    createShellTool(options.shell),
    readFileTool,
    listDirTool,
    createSearchTool(options.search),
    createApplyPatchTool(descriptorOf(options.dialect).freeformTools ? 'custom' : 'function'),
    updatePlanTool,
    enterPlanModeTool,
    exitPlanModeTool,
    askQuestionTool,
  ];
  const offered = all.filter((tool) => !options.exclude?.includes(tool.name) && !(options.withoutExecutingTools && tool.executes));
  const tools = new Map(offered.map((tool) => [tool.name, tool]));
  return {
    specs: [...tools.values()].map(specOf),
    has: (name) => tools.has(name),
    prepare(request, ctx) {
      const tool = tools.get(request.name);
      if (!tool) return { ok: false, outcome: failure(`Unknown tool "${request.name}". Available tools: ${[...tools.keys()].join(', ')}.`) };
      try {
        const args = tool.parse(request.input);
        const plan = tool.plan(args, ctx);
        const paths = plan.paths.map((requested) => classifyToolPath(ctx, requested));
        return { ok: true, call: { name: tool.name, input: request.input, args, plan, paths } };
      } catch (error) {
        if (error instanceof ToolError || error instanceof PathError) {
          return { ok: false, outcome: failure(`Invalid call to ${tool.name}: ${error.message}`) };
        }
        throw error;
      }
    },
    async run(call, ctx) {
      const tool = tools.get(call.name);
      if (!tool) return failure(`Unknown tool "${call.name}".`);
      try {
        const outcome = await tool.run(call.args, ctx);
        const bounded = truncateForModel(outcome.output);
        return { ...outcome, output: bounded.text, truncated: outcome.truncated || bounded.truncated };
      } catch (error) {
        if (error instanceof ToolError) return failure(error.message);
        if (ctx.signal.aborted) return failure('The tool call was aborted.');
        return failure(`${call.name} failed: ${(error as Error).message}`);
      }
    },
  };
}

function specOf(tool: Tool<unknown>): ToolSpec {
  const spec: ToolSpec = { name: tool.name, description: tool.description, kind: tool.kind };
  if (tool.kind === 'function') spec.parameters = tool.parameters;
  else if (tool.format) spec.format = tool.format;
  return spec;
}
