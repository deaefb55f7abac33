import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { LazyRequestLogger, lazyRequestLogger } from '../../src/ops/request-logger.js';

function capture() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const l of String(chunk).split('\n')) if (l) lines.push(l);
      cb();
    },
  });
  return { lines, logger: pino({ level: 'info', base: { pid: 1, hostname: 'h' }, timestamp: false }, sink) };
}

describe('the per-request logger', () => {
  it('makes its pino child only when something logs through it, with the request id on every line', () => {
    const { lines, logger } = capture();
    let children = 0;
    const counting = Object.assign(Object.create(logger), { child: (b: pino.Bindings, o?: pino.ChildLoggerOptions) => (children++, logger.child(b, o)) });
    const log = lazyRequestLogger(counting, { request_id: 'r-1' }, {});
    expect(log).toBeInstanceOf(LazyRequestLogger);
    expect(children).toBe(0);
    log.error({ err: 'boom' }, 'failed');
    log.warn('twice');
    log.debug('below the level');
    expect(children).toBe(1);
    expect(lines.map((l) => JSON.parse(l))).toEqual([
      { level: 50, pid: 1, hostname: 'h', request_id: 'r-1', err: 'boom', msg: 'failed' },
      { level: 40, pid: 1, hostname: 'h', request_id: 'r-1', msg: 'twice' },
    ]);
    expect(log.level).toBe('info');
  });

  it('writes the same bytes through the parent with request_id first as a child with its binding', () => {
    const { lines, logger } = capture();
    logger.child({ request_id: 'r-2' }).info({ method: 'GET', path: '/v1/models', status: 200, ms: 0.4 }, 'request completed');
    logger.info({ request_id: 'r-2', method: 'GET', path: '/v1/models', status: 200, ms: 0.4 }, 'request completed');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toBe(lines[0]);
  });

  it('gives a route with its own log level a real child at once', () => {
    const { logger } = capture();
    const log = lazyRequestLogger(logger, { request_id: 'r-3' }, { level: 'warn' });
    expect(log).not.toBeInstanceOf(LazyRequestLogger);
    expect(log.level).toBe('warn');
  });
});
