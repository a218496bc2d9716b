/** One printed line per figure, in a shape docs/BENCHMARKS.md can quote as is. */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface Figure {
  name: string;
  /** the measured value, already formatted with its unit */
  value: string;
  /** e.g. "≥ 60% of hello"; omitted for figures that only give context */
  target?: string;
  met?: boolean;
  /** how it was measured, in a few words */
  detail?: string;
}

export function printFigure(figure: Figure): void {
  const verdict = figure.target === undefined ? '' : `  [target ${figure.target}: ${figure.met ? 'met' : 'MISSED'}]`;
  const detail = figure.detail ? `  (${figure.detail})` : '';
  console.log(`${figure.name}: ${figure.value}${verdict}${detail}`);
}

export function percentile(values: readonly number[], fraction: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)];
}

export function median(values: readonly number[]): number {
  return percentile(values, 0.5);
}

export const whole = (value: number): string => Math.round(value).toLocaleString('en-US');
export const fixed = (value: number, digits = 1): string => value.toFixed(digits);

/** Runs a benchmark's main when its file is the entry point, and exits non-zero on a crash. */
export function runIfMain(moduleUrl: string, main: () => Promise<void>): void {
  if (process.argv[1] === undefined || moduleUrl !== pathToFileURL(resolve(process.argv[1])).href) return;
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(error);
      process.exit(1);
    },
  );
}
