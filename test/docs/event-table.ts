/**
 * The event table of docs/API.md, rendered from the catalogue (src/api/events.ts). The docs test
 * compares the table between its markers with this rendering; after changing the catalogue,
 * `node --import tsx test/docs/event-table.ts --write` rewrites it.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { EVENT_CATALOGUE, type EventType } from '../../src/api/events.ts';

export const API_DOC = fileURLToPath(new URL('../../docs/API.md', import.meta.url));
export const TABLE_START = '<!-- event-table:start (generated from src/api/events.ts) -->';
export const TABLE_END = '<!-- event-table:end -->';

type Schema = Record<string, any>;

export function renderEventTable(): string {
  const rows = (Object.keys(EVENT_CATALOGUE) as EventType[]).map((type) => {
    const { sent, data } = EVENT_CATALOGUE[type];
    return `| \`${type}\` | ${sent} | ${describeData(data as Schema)} |`;
  });
  return ['| Event | Sent when | Data |', '|---|---|---|', ...rows].join('\n');
}

function describeData(schema: Schema): string {
  if (typeof schema.title === 'string') return `a ${schema.title}`;
  const properties = Object.entries<Schema>(schema.properties ?? {});
  if (properties.length === 0) return 'empty object';
  const required = new Set<string>(schema.required ?? []);
  return properties.map(([name, field]) => `\`${name}\` ${describeType(field)}${required.has(name) ? '' : ' (optional)'}`).join(', ');
}

function describeType(schema: Schema): string {
  if (typeof schema.title === 'string') return schema.title;
  if ('const' in schema) return JSON.stringify(schema.const);
  if (Array.isArray(schema.anyOf)) return schema.anyOf.map(describeType).join(' or ');
  if (schema.type === 'object') return `{${Object.keys(schema.properties ?? {}).join(', ')}}`;
  return String(schema.type);
}

/** The text between the markers, or null when a marker is missing. */
export function documentedTable(markdown: string): string | null {
  const start = markdown.indexOf(TABLE_START);
  const end = markdown.indexOf(TABLE_END);
  if (start < 0 || end < start) return null;
  return markdown.slice(start + TABLE_START.length, end).trim();
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes('--write')) {
  const markdown = readFileSync(API_DOC, 'utf8');
  if (documentedTable(markdown) === null) throw new Error(`${API_DOC} has no ${TABLE_START} … ${TABLE_END} section`);
  const start = markdown.indexOf(TABLE_START) + TABLE_START.length;
  writeFileSync(API_DOC, `${markdown.slice(0, start)}\n${renderEventTable()}\n${markdown.slice(markdown.indexOf(TABLE_END))}`);
}
