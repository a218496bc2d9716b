/**
 * One fuzz campaign against a running server: requests from /openapi.json for the time given,
 * then the server must still be healthy and its data consistent. Shared by the bounded test and
 * the long run (scripts/fuzz.ts).
 */
import fc from 'fast-check';
import { caseOf, operationsOf, violationsOf, type FuzzTarget } from './contract-fuzz.ts';
import { invariantViolations, type Requester } from './invariants.ts';

export interface FuzzRunOptions {
  port: number;
  token: string | null;
  allowedOrigin: string;
  maximumRequestBytes: number;
  request: Requester;
  timeLimitMs: number;
  seed?: number;
  /** requests in flight at once */
  parallel?: number;
}

export interface FuzzReport {
  /** operations in /openapi.json */
  operations: number;
  requests: number;
  byOperation: Map<string, number>;
  byStatus: Map<number | string, number>;
  violations: string[];
  seed: number;
}

export async function runFuzzCampaign(options: FuzzRunOptions): Promise<FuzzReport> {
  const document = (await options.request('GET', '/openapi.json')).json;
  const operations = operationsOf(document);
  const liveIds: string[] = [];
  const remember = async () => {
    const sessions = (await options.request('GET', '/v1/sessions?archive=all&limit=100')).json?.data ?? [];
    const turns = (await options.request('GET', '/v1/turns')).json?.data ?? [];
    const requests = (await options.request('GET', '/v1/requests')).json?.data ?? [];
    liveIds.splice(0, liveIds.length, ...[...sessions, ...turns, ...requests].map((item: any) => item.id));
  };
  await remember();
  const target: FuzzTarget = { port: options.port, document, maximumRequestBytes: options.maximumRequestBytes, liveIds: () => liveIds, token: options.token, allowedOrigin: options.allowedOrigin };
  const report: FuzzReport = { operations: operations.length, requests: 0, byOperation: new Map(), byStatus: new Map(), violations: [], seed: options.seed ?? Date.now() };
  const started = Date.now();
  const parallel = options.parallel ?? 4;
  let round = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(caseOf(target, operations), { minLength: parallel, maxLength: parallel }), async (cases) => {
      const answers = await Promise.all(cases.map((fuzzCase) => violationsOf(target, fuzzCase)));
      const found = answers.flatMap((answer) => answer.problems);
      for (const { status } of answers) report.byStatus.set(status, (report.byStatus.get(status) ?? 0) + 1);
      for (const fuzzCase of cases) {
        const key = `${fuzzCase.operation.method} ${fuzzCase.operation.path}`;
        report.byOperation.set(key, (report.byOperation.get(key) ?? 0) + 1);
      }
      report.requests += cases.length;
      if (++round % 25 === 0) await remember();
      // The server's state moves on with every request, so a failing case is recorded, not shrunk.
      report.violations.push(...found);
      return report.violations.length < 20;
    }),
    { seed: report.seed, numRuns: Number.MAX_SAFE_INTEGER, interruptAfterTimeLimit: options.timeLimitMs, markInterruptAsFailure: false, endOnFailure: true },
  ).catch((error: Error) => {
    if (report.violations.length === 0) report.violations.push(error.message.split('\n').slice(0, 12).join('\n'));
  });
  const health = await options.request('GET', '/healthz');
  if (health.status !== 200) report.violations.push(`healthz ${health.status} after ${Date.now() - started} ms of fuzzing`);
  const ready = await options.request('GET', '/readyz');
  if (ready.status !== 200) report.violations.push(`readyz ${ready.status} after fuzzing`);
  report.violations.push(...(await invariantViolations(options.request, [], { activeAllowed: true })));
  return report;
}
