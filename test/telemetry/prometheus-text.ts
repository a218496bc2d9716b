/** The value of one sample in Prometheus text, by metric name and exact labels; undefined if absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`).sort().join(',');
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const present = (match[2] ?? '').split(/,(?=[a-zA-Z_]\w*=")/).filter(Boolean).sort().join(',');
    if (present === wanted) return Number(match[3]);
  }
  return undefined;
}

/**
 * The address of /metrics of an agentd child started with `--metrics-port 0`, from the line it
 * prints (which may follow the line its start waited for); undefined until printed.
 */
export function metricsUrlOf(stdout: string): string | undefined {
  return /^agentd metrics at (\S+)$/m.exec(stdout)?.[1];
}
