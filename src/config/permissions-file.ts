import { UsageError } from './flags.ts';
import { readJsonConfigFile } from './json-config-file.ts';

export type PermissionAction = 'allow' | 'ask' | 'deny';

/** One operator rule of --permissions-file (CONTRACT.md §20); agent/policy/permission-rules.ts applies them. */
export interface PermissionRule {
  /** a tool's model-facing name: `shell`, `apply_patch`, `read_file`, `mcp__server__tool`, … */
  tool: string;
  /** a glob over the command line (shell) or the path relative to the session cwd; `*` matches anything, `/` included */
  pattern: string;
  action: PermissionAction;
}

const ACTIONS: readonly string[] = ['allow', 'ask', 'deny'];
const RULE_FIELDS = ['tool', 'pattern', 'action'];
const MAX_RULES = 10_000;
const MAX_TEXT = 4_096;

/**
 * Reads and validates --permissions-file whole: `{"rules": [{"tool", "pattern", "action"}]}`.
 * Any problem throws UsageError naming the file and the field (`rules[2].action: …`), so a broken
 * file stops start-up instead of leaving a rule silently unapplied.
 */
export function loadPermissionsFile(file: string): PermissionRule[] {
  const fail = (message: string): never => {
    throw new UsageError(`--permissions-file ${file}: ${message}`);
  };
  const document = readJsonConfigFile(file, fail);
  if (!isObject(document)) return fail('must be a JSON object with a "rules" array');
  for (const key of Object.keys(document)) if (key !== 'rules') fail(`${key}: unknown field (expected only "rules")`);
  const rules = document.rules;
  if (!Array.isArray(rules)) return fail('rules: must be an array of {"tool", "pattern", "action"}');
  if (rules.length > MAX_RULES) fail(`rules: at most ${MAX_RULES} rules`);
  return rules.map((entry, index) => parseRule(entry, `rules[${index}]`, fail));
}

function parseRule(entry: unknown, at: string, fail: (message: string) => never): PermissionRule {
  if (!isObject(entry)) return fail(`${at}: must be an object with "tool", "pattern" and "action"`);
  for (const key of Object.keys(entry)) if (!RULE_FIELDS.includes(key)) fail(`${at}.${key}: unknown field (expected "tool", "pattern", "action")`);
  const { tool, pattern, action } = entry;
  if (typeof tool !== 'string' || !/^[A-Za-z0-9_-]{1,128}$/.test(tool)) fail(`${at}.tool: must be a tool name (1 to 128 letters, digits, "_" or "-")`);
  if (typeof pattern !== 'string' || pattern.length === 0 || pattern.length > MAX_TEXT) fail(`${at}.pattern: must be a non-empty string of at most ${MAX_TEXT} characters`);
  if (typeof action !== 'string' || !ACTIONS.includes(action)) fail(`${at}.action: must be "allow", "ask" or "deny"`);
  return { tool: tool as string, pattern: pattern as string, action: action as PermissionAction };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
