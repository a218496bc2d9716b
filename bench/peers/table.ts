/** The one table of the peer benchmark: a row per figure, a column per server, each peer beside its ratio to agentd. */
import { fixed, whole } from '../support/report.ts';

/** A figure, or why there is none. `instead` replaces the ratio where one would mislead. */
export type Cell = { value: number; text: string; instead?: string } | { unavailable: string };

export interface FigureRow {
  key: string;
  label: string;
  /** throughput: higher is better; time and memory: lower */
  higherIsBetter: boolean;
}

export const FIGURES = [
  { key: 'ready', label: 'Start-up to ready (fresh state, median of 3)', higherIsBetter: false },
  { key: 'rssIdle', label: 'RSS idle (process tree)', higherIsBetter: false },
  { key: 'get', label: 'GET one session/thread, 32 conn. (wrk)', higherIsBetter: true },
  { key: 'list', label: 'List 50 of 200 sessions/threads, 32 conn. (wrk)', higherIsBetter: true },
  { key: 'create', label: 'Create a session/thread, 32 conn. (wrk)', higherIsBetter: true },
  { key: 'turns', label: 'Turns/s, zero-latency model, 4 in flight', higherIsBetter: true },
  { key: 'overhead', label: 'Server time per turn, p50, one at a time', higherIsBetter: false },
  { key: 'fanout', label: 'SSE fan-out, events read/s by all subscribers of one streamed turn', higherIsBetter: true },
  { key: 'rssLoaded', label: 'RSS after the load (process tree)', higherIsBetter: false },
  { key: 'capacity', label: 'Live turns sustained with p99 delivery ≤ 1 s (10 deltas/s for 5 s each, a watcher each)', higherIsBetter: true },
] as const satisfies readonly FigureRow[];

export type FigureKey = (typeof FIGURES)[number]['key'];

export interface Column {
  name: string;
  cells: Partial<Record<FigureKey, Cell>>;
}

export const perSecond = (value: number) => ({ value, text: `${whole(value)}/s` });
export const milliseconds = (value: number) => ({ value, text: `${value < 10 ? fixed(value, 2) : whole(value)} ms` });
export const megabytes = (value: number) => ({ value, text: `${fixed(value)} MB` });

/** Prints a Markdown table; the first column is agentd, and every other cell says how far agentd is ahead or behind. */
export function printTable(columns: readonly Column[]): void {
  const [agentd, ...peers] = columns;
  const header = ['Figure', agentd.name, ...peers.map((peer) => peer.name)];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
  for (const figure of FIGURES) {
    const ours = agentd.cells[figure.key];
    const row = [figure.label, describe(ours), ...peers.map((peer) => withRatio(peer.cells[figure.key], ours, figure.higherIsBetter))];
    lines.push(`| ${row.join(' | ')} |`);
  }
  console.log(lines.join('\n'));
}

function describe(cell: Cell | undefined): string {
  if (cell === undefined) return 'n/a (not measured)';
  return 'unavailable' in cell ? `n/a (${cell.unavailable})` : cell.text;
}

function withRatio(cell: Cell | undefined, ours: Cell | undefined, higherIsBetter: boolean): string {
  if (cell !== undefined && 'instead' in cell && cell.instead) return `${cell.text} (${cell.instead})`;
  if (cell === undefined || 'unavailable' in cell || ours === undefined || 'unavailable' in ours || !(cell.value > 0) || !(ours.value > 0)) return describe(cell);
  const agentdAhead = higherIsBetter ? ours.value / cell.value : cell.value / ours.value;
  const ratio = agentdAhead >= 1 ? `agentd ${fixed(agentdAhead)}× better` : `peer ${fixed(1 / agentdAhead)}× better`;
  return `${cell.text} (${ratio})`;
}
