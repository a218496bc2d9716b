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
 *
 * A shell command whose programs are known only at run time (CONTRACT.md §21's "unknown") could
 * be what any deny rule names: decide.ts refuses it by the first deny rule of the tool, and no
 * allow rule ever runs it.
 */
import path from 'node:path';
import type { PermissionAction, PermissionRule } from '../../config/permissions-file.ts';
import { readCommandLine } from './command-line.ts';
import { programName } from './nested-commands.ts';

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
  const line = readCommandLine(command);
  const texts = new Set([line.source.trim()]);
  for (const { argv } of line.invocations) {
    if (argv.length === 0) continue; // redirections alone (`> f`): no program to name
    texts.add(argv.join(' '));
    texts.add([programName(argv[0]), ...argv.slice(1)].join(' '));
  }
  return [...texts];
}
