/** Fastify's per-request logger (src/http/request-logger.ts): a pino child made only when a line is written. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { requestLoggerFactory } from '../../src/http/request-logger.ts';

function capturingLogger(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  let children = 0;
  const child = logger.child;
  logger.child = function (this: typeof logger, ...args: Parameters<typeof child>) {
    children += 1;
    return child.apply(this, args);
  } as typeof logger.child;
  return { logger, lines, children: () => children };
}

test('a line the level lets through goes out with the request id, through a child made once', () => {
  const { logger, lines, children } = capturingLogger('info');
  const requestLog = requestLoggerFactory(logger, { reqId: 'req-1' }, {});
  assert.equal(children(), 0, 'no child before a line');
  requestLog.info({ status: 404 }, 'request');
  requestLog.warn('second');
  assert.equal(children(), 1);
  assert.deepEqual(lines.map((line) => [line.level, line.reqId, line.status ?? null, line.msg]), [
    [30, 'req-1', 404, 'request'],
    [40, 'req-1', null, 'second'],
  ]);
});

test('a line below the level makes no child and writes nothing', () => {
  const { logger, lines, children } = capturingLogger('info');
  const requestLog = requestLoggerFactory(logger, { reqId: 'req-2' }, {});
  requestLog.debug({ status: 200 }, 'request');
  requestLog.trace('noise');
  assert.equal(children(), 0);
  assert.deepEqual(lines, []);
  assert.equal(requestLog.level, 'info');
});

test('its children carry the request id and their own bindings; a level of its own is honoured', () => {
  const { logger, lines } = capturingLogger('info');
  requestLoggerFactory(logger, { reqId: 'req-3' }, {}).child({ tenant: 't1' }).info('tenant line');
  const chatty = requestLoggerFactory(logger, { reqId: 'req-4' }, { level: 'debug' });
  assert.equal(chatty.level, 'debug');
  chatty.debug('route at debug');
  assert.deepEqual(lines.map((line) => [line.reqId, line.tenant ?? null, line.msg]), [
    ['req-3', 't1', 'tenant line'],
    ['req-4', null, 'route at debug'],
  ]);
});
