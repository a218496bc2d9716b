import type { PlanEntry, ToolKind } from '@agentclientprotocol/sdk';

/** What each of agentd's tools does, in ACP's words (the editor picks an icon and a layout by it). */
const KIND_OF_TOOL: Record<string, ToolKind> = {
  shell: 'execute',
  read_file: 'read',
  list_dir: 'read',
  search: 'search',
  apply_patch: 'edit',
  update_plan: 'think',
  enter_plan_mode: 'switch_mode',
  exit_plan_mode: 'switch_mode',
};

export function toolKind(name: string): ToolKind {
  return KIND_OF_TOOL[name] ?? 'other';
}

/** A short title for the call: the command, the path or the pattern when the arguments name one. */
export function toolTitle(name: string, argumentsText: string | null): string {
  const args = parseArguments(argumentsText);
  const detail = [args?.cmd, args?.command, args?.path, args?.pattern, args?.query].find((value) => typeof value === 'string');
  return typeof detail === 'string' && detail !== '' ? `${name}: ${detail.slice(0, 200)}` : name;
}

function parseArguments(argumentsText: string | null): Record<string, unknown> | null {
  if (argumentsText === null) return null;
  try {
    const parsed: unknown = JSON.parse(argumentsText);
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** `update_plan`'s steps as an ACP plan; null when the arguments are not a plan. */
export function planEntries(argumentsText: string | null): PlanEntry[] | null {
  const steps = parseArguments(argumentsText)?.plan;
  if (!Array.isArray(steps)) return null;
  const entries: PlanEntry[] = [];
  for (const step of steps) {
    const { step: content, status } = (step ?? {}) as { step?: unknown; status?: unknown };
    if (typeof content !== 'string') continue;
    const known = status === 'in_progress' || status === 'completed' ? status : 'pending';
    entries.push({ content, priority: 'medium', status: known });
  }
  return entries;
}
