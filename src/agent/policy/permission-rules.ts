/**
 * The operator's rules of --permissions-file (CONTRACT.md §20), judged for one tool call: which
 * rule has the last word, or none. decide.ts turns the answer into refuse, ask or run; the
 * built-in refusals (a destructive command, a path outside every root, plan mode) hold whatever a
 * rule says, so a rule can narrow what runs but never widen what the sandbox or confinement allows.
 *
 * What a pattern is matched against:
 * - shell: the command line as written (an argv array shell-quoted), and also every program
 *   invocation inside it: each simple command of a compound line, what a wrapper runs (`sudo`,
 *   `env`, `timeout`, …), nested shell scripts (`bash -c '…'`, `eval`), command substitutions, with
 *   the program both as written and by its base name (`/bin/rm` is also `rm`);
 * - tools that name paths (read_file, list_dir, search, apply_patch): each path, relative to the
 *   session cwd after symlinks (`../x` when it leaves the cwd);
 * - any other tool (MCP tools, update_plan, …): the empty string, which only `*` matches.
 * For each text the last matching rule of the tool wins; across the texts the strictest answer wins
 * (deny, then ask), and allow holds only when every text is allowed, so `git status*` cannot allow
 * `git status; rm -rf src`.
 */
import path from 'node:path';
import type { PermissionAction, PermissionRule } from '../../config/permissions-file.ts';
import { quoteArgv } from './allowance-key.ts';
import { programName, unwrap } from './nested-commands.ts';
import { parseShell } from './shell-syntax.ts';

export type { PermissionRule };

export interface RuleVerdict {
  action: PermissionAction;
  /** the pattern of the rule that decided, quoted to the model on a refusal */
  pattern: string;
}

export interface RuleSubject {
  tool: string;
  command?: readonly string[] | string;
  /** canonical paths of the call (PathClassification.resolved) */
  paths: readonly string[];
  /** the session cwd, canonical, that the paths are made relative to */
  cwd: string;
}

const MAX_NESTING = 5;
const compiled = new WeakMap<PermissionRule, RegExp>();

/** The verdict of the rules for a call, or null when no rule of its tool matches every text judged. */
export function judgeByRules(rules: readonly PermissionRule[], subject: RuleSubject): RuleVerdict | null {
  const own = rules.filter((rule) => rule.tool === subject.tool);
  if (own.length === 0) return null;
  const texts = subject.command !== undefined ? commandTexts(subject.command) : subject.paths.length > 0 ? subject.paths.map((entry) => relativeText(subject.cwd, entry)) : [''];
  const verdicts = texts.map((text) => lastMatch(own, text));
  return (
    verdicts.find((verdict) => verdict?.action === 'deny') ??
    verdicts.find((verdict) => verdict?.action === 'ask') ??
    (verdicts.every((verdict) => verdict?.action === 'allow') ? verdicts[0] : null)
  );
}

function lastMatch(rules: readonly PermissionRule[], text: string): RuleVerdict | null {
  for (let index = rules.length - 1; index >= 0; index--) {
    const rule = rules[index];
    if (patternOf(rule).test(text)) return { action: rule.action, pattern: rule.pattern };
  }
  return null;
}

/** `*` is any run of characters, `/` and newlines included; everything else is itself. */
export function globToRegExp(pattern: string): RegExp {
  const body = pattern.split('*').map((part) => part.replace(/[\\^$.|?+()[\]{}]/g, '\\$&')).join('[\\s\\S]*');
  return new RegExp(`^${body}$`);
}

function patternOf(rule: PermissionRule): RegExp {
  let expression = compiled.get(rule);
  if (!expression) {
    expression = globToRegExp(rule.pattern);
    compiled.set(rule, expression);
  }
  return expression;
}

function relativeText(cwd: string, resolved: string): string {
  return path.relative(cwd, resolved) || '.';
}

/** The whole line, then every invocation inside it (see the module comment). */
export function commandTexts(command: readonly string[] | string): string[] {
  const line = typeof command === 'string' ? command.trim() : quoteArgv(command);
  const texts = new Set([line]);
  if (typeof command === 'string') collectScript(command, texts, 0);
  else collectInvocation(command, texts, 0);
  return [...texts];
}

function collectScript(source: string, texts: Set<string>, depth: number): void {
  if (depth > MAX_NESTING) return;
  const script = parseShell(source);
  for (const simple of script.commands) collectInvocation(simple.argv, texts, depth, simple.redirections);
  for (const body of script.substitutions) collectScript(body, texts, depth + 1);
}

function collectInvocation(argv: readonly string[], texts: Set<string>, depth: number, redirections: Parameters<typeof unwrap>[1] = []): void {
  if (argv.length === 0) return;
  const { invocations, scripts } = unwrap(argv, redirections);
  for (const invocation of invocations) {
    if (invocation.length === 0) continue;
    texts.add(invocation.join(' '));
    texts.add([programName(invocation[0]), ...invocation.slice(1)].join(' '));
  }
  for (const nested of scripts) collectScript(nested, texts, depth + 1);
}
