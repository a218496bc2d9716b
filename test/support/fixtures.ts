/**
 * The recorded provider streams in test/fixtures/provider-fixtures (see its SOURCES.md), as SSE bytes
 * ready to replay. `.sse` files are raw recordings and are returned byte for byte; `.chunks.jsonl`
 * files keep only the data payloads and are rebuilt the way SOURCES.md prescribes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export type FixtureDialect = 'openai-responses' | 'anthropic-messages' | 'openai-chat';

const FOLDER_DIALECTS: Record<string, FixtureDialect> = {
  'openai-responses': 'openai-responses',
  anthropic: 'anthropic-messages',
  'chat-completions': 'openai-chat',
};

const BUNDLED_FIXTURES = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures', 'provider-fixtures');

/** AGENTD_FIXTURES_DIR, else the recordings kept in the repository. */
function fixturesDir(): string {
  return process.env.AGENTD_FIXTURES_DIR ?? BUNDLED_FIXTURES;
}

export function fixturePath(relative: string): string {
  return join(fixturesDir(), relative);
}

/** The dialect a fixture belongs to, from its folder; null for the errors/ bodies. */
function fixtureDialect(relative: string): FixtureDialect | null {
  return FOLDER_DIALECTS[relative.split('/')[0]] ?? null;
}

/** Every stream fixture (errors/ excluded), as paths relative to the fixtures folder, by dialect. */
export function listFixtures(): Record<FixtureDialect, string[]> {
  const byDialect: Record<FixtureDialect, string[]> = { 'openai-responses': [], 'anthropic-messages': [], 'openai-chat': [] };
  for (const [folder, dialect] of Object.entries(FOLDER_DIALECTS)) {
    const names = readdirSync(join(fixturesDir(), folder)).filter((name) => name.endsWith('.sse') || name.endsWith('.chunks.jsonl'));
    byDialect[dialect] = names.sort().map((name) => `${folder}/${name}`);
  }
  return byDialect;
}

const sseCache = new Map<string, Buffer>();

/** The fixture as the provider sent it on the wire (cached: benchmarks replay fixtures a lot). */
export function fixtureAsSse(relative: string): Buffer {
  const cached = sseCache.get(relative);
  if (cached) return cached;
  const raw = readFileSync(fixturePath(relative));
  const sse = relative.endsWith('.chunks.jsonl') ? chunksToSse(raw.toString('utf8'), fixtureDialect(relative)) : raw;
  sseCache.set(relative, sse);
  return sse;
}

/**
 * A fixture that holds several responses back to back (the Responses 4-step file), split into one
 * SSE body per response at each `response.created` / `message_start` event.
 */
export function fixtureResponsesAsSse(relative: string): Buffer[] {
  const events = fixtureAsSse(relative).toString('utf8').split(/\r?\n\r?\n/).filter((block) => block.trim() !== '');
  const responses: string[][] = [];
  for (const block of events) {
    const dataLine = block.split(/\r?\n/).find((line) => line.startsWith('data:')) ?? '';
    const startsResponse = /"type"\s*:\s*"(response\.created|message_start)"/.test(dataLine);
    if (startsResponse || responses.length === 0) responses.push([]);
    responses[responses.length - 1].push(`${block}\n\n`);
  }
  return responses.map((blocks) => Buffer.from(blocks.join(''), 'utf8'));
}

/** The JSON objects a fixture carries as `data:` payloads, in order (`[DONE]` left out). */
export function fixturePayloads(relative: string): Array<Record<string, unknown>> {
  const payloads: Array<Record<string, unknown>> = [];
  for (const block of fixtureAsSse(relative).toString('utf8').split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
      .join('\n');
    if (data !== '' && data !== '[DONE]') payloads.push(JSON.parse(data) as Record<string, unknown>);
  }
  return payloads;
}

function chunksToSse(text: string, dialect: FixtureDialect | null): Buffer {
  const lines = text.split(/\r?\n/).filter((line) => line.trim() !== '');
  if (dialect === 'openai-chat') {
    return Buffer.from(lines.map((line) => `data: ${line}\n\n`).join('') + 'data: [DONE]\n\n', 'utf8');
  }
  const events = lines.map((line) => {
    const type = (JSON.parse(line) as { type?: unknown }).type;
    return `event: ${String(type)}\ndata: ${line}\n\n`;
  });
  return Buffer.from(events.join(''), 'utf8');
}
