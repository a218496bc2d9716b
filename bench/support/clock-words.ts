/**
 * The paced model's clocks (paced-model-server.ts): every word of its replies is `t` and sixteen
 * digits, the wall-clock time of the word's write in microseconds. A reader subtracts it from its
 * own clock: the delivery latency from the model's write to that read, across every process.
 */

export function nowMicros(): number {
  return (performance.timeOrigin + performance.now()) * 1000;
}

/** The clock word for now. */
export function clockWord(): string {
  return `t${Math.round(nowMicros())}`;
}

/** Each clock word in `text` (the whole word), with how long ago it was written at `readAtMicros`, in ms. */
export function* clockWordsIn(text: string, readAtMicros: number): Generator<{ word: string; latencyMs: number }> {
  for (const match of text.matchAll(/t(\d{16})/g)) yield { word: match[0], latencyMs: (readAtMicros - Number(match[1])) / 1000 };
}
