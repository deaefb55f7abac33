import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { accessLineWriter, ACCESS_MESSAGE, type AccessFields } from '../../src/ops/access-line.js';
import { createLogger } from '../../src/services.js';

function captured(make: (sink: { write(line: string): void }) => pino.Logger) {
  const lines: string[] = [];
  const logger = make({ write: (line) => void lines.push(line) });
  return { lines, logger };
}

const base: AccessFields = { request_id: '6f1c2a8e-3b1d-4c55-9a0e-2f7f1b9c1d2e', method: 'POST', path: '/v1/embeddings', status: 200, ms: 0.8 };

/** Field sets with everything a line can carry that needs escaping, or not. */
const samples: AccessFields[] = [
  base,
  { ...base, method: 'GET', path: '/v1/videos/' + 'a'.repeat(400), status: 404, ms: 12 },
  { ...base, path: '/v1/x"y\\z', request_id: 'client.id:7-x_y' },
  { ...base, path: '/a\u0001b\tc\u007f\u00e9\u00ff' },
  { ...base, path: '/"' + '\\'.repeat(60) + '"'.repeat(60) },
  { ...base, path: '/caf\u00e9/\u4e2d/\ud83d\ude00' },
  { ...base, path: '/lone\ud800half' },
  { ...base, path: '/lone' + 'x'.repeat(120) + '\udc00' },
  { ...base, status: 503, ms: 0 },
  { ...base, ms: Number.NaN },
  { ...base, ms: Number.POSITIVE_INFINITY },
  { ...base, ms: 1234567.8 },
];

describe('the access line', () => {
  afterEach(() => vi.restoreAllMocks());

  it("is byte for byte what pino's info writes, redaction sink included", () => {
    vi.spyOn(Date, 'now').mockReturnValue(1_763_835_000_123);
    const { lines, logger } = captured((sink) => createLogger('info', { sink }));
    const write = accessLineWriter(logger);
    const info = vi.spyOn(logger, 'info');
    for (const f of samples) {
      logger.info({ ...f }, ACCESS_MESSAGE);
      write(f);
    }
    expect(lines).toHaveLength(samples.length * 2);
    // The writer's own rendering, not a call of info: only the short path with a lone surrogate went to pino.
    expect(info).toHaveBeenCalledTimes(samples.length + 1);
    for (let i = 0; i < lines.length; i += 2) expect(lines[i + 1]).toBe(lines[i]);
    expect(JSON.parse(lines[0]!)).toEqual({ level: 30, time: 1_763_835_000_123, pid: process.pid, hostname: expect.any(String), ...base, msg: ACCESS_MESSAGE });
  });

  it('still passes through the redaction of every line', () => {
    const { lines, logger } = captured((sink) => createLogger('info', { sink, secrets: ['configured-secret-value'] }));
    const write = accessLineWriter(logger);
    write({ ...base, path: '/v1/files/sk-live-abcdef1234567890/configured-secret-value', request_id: 'sk-proj-0123456789abcdef' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain('abcdef1234567890');
    expect(lines[0]).not.toContain('configured-secret-value');
    expect(lines[0]).not.toContain('0123456789abcdef');
    expect(JSON.parse(lines[0]!).path).toContain('[redacted]');
  });

  it('follows the logger level, also when it changes', () => {
    const { lines, logger } = captured((sink) => createLogger('warn', { sink }));
    const write = accessLineWriter(logger);
    write(base);
    expect(lines).toHaveLength(0);
    logger.level = 'info';
    write(base);
    expect(lines).toHaveLength(1);
  });

  it('leaves a logger that changes its lines (mixin, formatter, redaction of a field, message key) to pino', () => {
    vi.spyOn(Date, 'now').mockReturnValue(1_763_835_000_000);
    const variants: pino.LoggerOptions[] = [
      { mixin: () => ({ zone: 'eu' }) },
      { formatters: { log: (o) => ({ ...o, formatted: true }) } },
      { redact: ['path'] },
      { serializers: { method: (m: string) => m.toLowerCase() } },
      { messageKey: 'message' },
      { msgPrefix: '[gw] ' },
      { nestedKey: 'data' },
    ];
    for (const options of variants) {
      const { lines, logger } = captured((sink) => pino(options, sink as never));
      logger.info({ ...base }, ACCESS_MESSAGE);
      accessLineWriter(logger)(base);
      expect(lines).toHaveLength(2);
      expect(lines[1], JSON.stringify(Object.keys(options))).toBe(lines[0]);
    }
  });
});
