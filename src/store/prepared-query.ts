import type { Compilable, CompiledQuery, DialectAdapter, QueryResult } from 'kysely';
import type { Db } from './database.ts';

/** Marks where a call's own value goes; `read` takes it from the values the query runs with. */
class Placeholder<Values> {
  constructor(readonly read: (values: Values) => unknown) {}
}

/** Inside a prepared query's builder: a value taken from each call's values, in place of a literal one. */
export type Param<Values> = <T>(read: (values: Values) => T) => T;

/** One parameter of the compiled SQL: a call's own value, or a value the builder wrote in. */
type Slot<Values> = Placeholder<Values> | { constant: unknown };

interface Template<Values> {
  compiled: CompiledQuery;
  slots: Slot<Values>[];
}

export interface PreparedQuery<Values, Row> {
  (db: Db, values: Values): Promise<QueryResult<Row>>;
}

/**
 * A query Kysely builds and compiles once per database instead of on every call: for the
 * statements of every turn and request, building the tree and compiling it to SQL cost more than
 * running them (docs/BENCHMARKS.md). `build` writes the query as usual, with `param(values => …)`
 * where each call's value goes. It runs through the same executor as any query, on either backend,
 * inside a transaction or not.
 */
export function preparedQuery<Values, Row = unknown>(build: (db: Db, param: Param<Values>) => Compilable<Row>): PreparedQuery<Values, Row> {
  // by adapter: the SQL depends on the dialect, and a database and its transactions share one adapter
  const templates = new WeakMap<DialectAdapter, Template<Values>>();
  return async (db, values) => {
    const adapter = db.getExecutor().adapter;
    let template = templates.get(adapter);
    if (template === undefined) {
      template = compileTemplate(db, build);
      templates.set(adapter, template);
    }
    const { compiled, slots } = template;
    const parameters = slots.map((slot) => (slot instanceof Placeholder ? slot.read(values) : slot.constant));
    return db.executeQuery<Row>({ sql: compiled.sql, query: compiled.query, queryId: compiled.queryId, parameters });
  };
}

function compileTemplate<Values, Row>(db: Db, build: (db: Db, param: Param<Values>) => Compilable<Row>): Template<Values> {
  const placeholders = new Set<Placeholder<Values>>();
  const param = <T>(read: (values: Values) => T) => {
    const placeholder = new Placeholder(read);
    placeholders.add(placeholder);
    return placeholder as T;
  };
  const compiled = build(db, param).compile();
  const slots = compiled.parameters.map((value) => (value instanceof Placeholder ? (value as Placeholder<Values>) : { constant: value }));
  // a placeholder Kysely did not bind (one given where a column name goes) would run with the wrong SQL
  if (new Set(slots.filter((slot) => slot instanceof Placeholder)).size !== placeholders.size) {
    throw new Error(`a prepared query binds ${placeholders.size} values, but its SQL has fewer: ${compiled.sql}`);
  }
  return { compiled, slots };
}

/** Every column of a row, each a parameter read from the call's row; `columns` names them all. */
export function rowParams<Row>(param: Param<Row>, columns: { [Column in keyof Row]-?: true }): Row {
  const row: Partial<Row> = {};
  for (const column of Object.keys(columns) as (keyof Row)[]) row[column] = param((values) => values[column]);
  return row as Row;
}
