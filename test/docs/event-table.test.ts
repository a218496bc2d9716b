import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { API_DOC, TABLE_END, TABLE_START, documentedTable, renderEventTable } from './event-table.ts';
import { EVENT_TYPES } from '../../src/api/events.ts';

describe('the event table of docs/API.md', () => {
  it('is exactly the table the catalogue renders', () => {
    const documented = documentedTable(readFileSync(API_DOC, 'utf8'));
    assert.notEqual(documented, null, `docs/API.md keeps the table between ${TABLE_START} and ${TABLE_END}`);
    assert.equal(documented, renderEventTable(), 'run: node --import tsx test/docs/event-table.ts --write');
  });

  it('has one row per declared type, in the order of the catalogue', () => {
    const rows = renderEventTable().split('\n').slice(2).map((row) => /^\| `([^`]+)`/.exec(row)?.[1]);
    assert.deepEqual(rows, EVENT_TYPES);
  });
});
