import { inert, paint } from './style.ts';

/** How many lines of a tool's output the chat shows; the rest is counted. */
const OUTPUT_LINES = 6;
const LINE_WIDTH = 160;
/** The header a shell result starts with ends at this line (src/agent/tools/shell.ts). */
const OUTPUT_MARKER = 'Output:';

/** A tool call as one line: the command of a shell call, the arguments of others, flattened. */
export function toolCallLine(name: string, argumentsText: string | null): string {
  return `⏺ ${name} ${oneLine(commandOf(argumentsText) ?? patchOf(argumentsText) ?? argumentsText ?? '')}`.trimEnd();
}

/** The patch of an apply_patch call (its input is the patch, or `{patch}`); null for other tools. */
export function patchOf(argumentsText: string | null): string | null {
  if (!argumentsText) return null;
  if (argumentsText.trimStart().startsWith('*** Begin Patch')) return argumentsText;
  const parsed = parseJson(argumentsText);
  return typeof parsed?.patch === 'string' && parsed.patch.trimStart().startsWith('*** Begin Patch') ? parsed.patch : null;
}

/**
 * A patch as diff lines, coloured on a colour terminal: additions green, removals red, file and
 * hunk headers cyan, context dim.
 */
export function diffLines(patch: string, colour: boolean): string[] {
  return inert(patch.replace(/\r\n/g, '\n').replace(/\n$/, ''))
    .split('\n')
    .filter((line) => !/^\*\*\* (Begin|End) Patch/.test(line))
    .map((line) => (colour ? diffLine(line) : line));
}

/** One line of a patch, coloured. */
export function diffLine(line: string): string {
  if (line.startsWith('***')) return paint('bold', paint('cyan', line));
  if (line.startsWith('@@')) return paint('cyan', line);
  if (line.startsWith('+')) return paint('green', line);
  if (line.startsWith('-')) return paint('red', line);
  return paint('dim', line);
}

/**
 * What a finished tool call shows: a summary of its header (`Exit code: 0 · Wall time: 0.1 s`)
 * and the first lines of the output itself, then how many more there are.
 */
export function toolOutputLines(output: string): { summary: string | null; lines: string[] } {
  const all = output.replace(/\r\n/g, '\n').replace(/\s+$/, '').split('\n');
  const marker = all.indexOf(OUTPUT_MARKER);
  const header = marker >= 0 && marker <= 6 ? all.slice(0, marker) : [];
  const body = marker >= 0 && marker <= 6 ? all.slice(marker + 1) : all;
  while (body.length > 0 && body[0].trim() === '') body.shift();
  const lines = body.slice(0, OUTPUT_LINES).map((line) => oneLine(line, false));
  if (body.length > OUTPUT_LINES) lines.push(`… ${body.length - OUTPUT_LINES} more lines`);
  return { summary: header.length > 0 ? header.map((line) => oneLine(line)).join(' · ') : null, lines };
}

function commandOf(argumentsText: string | null): string | null {
  const command = argumentsText ? parseJson(argumentsText)?.command : undefined;
  if (typeof command === 'string') return command;
  if (Array.isArray(command) && command.every((part) => typeof part === 'string')) return command.map((part) => (/^[\w./:=@%+-]+$/.test(part) ? part : `'${part.replace(/'/g, `'\\''`)}'`)).join(' ');
  return null;
}

function parseJson(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return value && typeof value === 'object' ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function oneLine(text: string, collapse = true): string {
  const flat = collapse ? inert(text).replace(/\s+/g, ' ').trim() : inert(text.replace(/\t/g, '  ')).trimEnd();
  return flat.length > LINE_WIDTH ? `${flat.slice(0, LINE_WIDTH - 1)}…` : flat;
}

const STEP_MARKS: Record<string, string> = { pending: '☐', in_progress: '◐', completed: '☑' };

/**
 * The planning tools in words instead of their JSON: a plan (exit_plan_mode) as its Markdown, the
 * steps of update_plan as a checklist, the reason or question of enter_plan_mode and ask_question.
 * Null for any other tool, or arguments that are not what the tool takes.
 */
export function planningView(name: string, argumentsText: string | null): { header: string; lines: string[]; markdown: boolean } | null {
  const args = argumentsText ? parseJson(argumentsText) : null;
  if (!args) return null;
  if (name === 'exit_plan_mode' && typeof args.plan === 'string') return { header: `⏺ ${name}: the plan`, lines: args.plan.replace(/\r\n/g, '\n').split('\n'), markdown: true };
  if (name === 'update_plan' && Array.isArray(args.plan)) {
    const steps = args.plan.filter((step): step is { step: string; status: string } => typeof step?.step === 'string');
    return { header: `⏺ ${name}`, lines: steps.map((step) => `${STEP_MARKS[step.status] ?? '·'} ${oneLine(step.step)}`), markdown: false };
  }
  if (name === 'enter_plan_mode' && typeof args.reason === 'string') return { header: `⏺ ${name}: ${oneLine(args.reason)}`, lines: [], markdown: false };
  if (name === 'ask_question' && typeof args.question === 'string') return { header: `⏺ ${name}: ${oneLine(args.question)}`, lines: [], markdown: false };
  return null;
}
