import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRange } from '../../src/admin/usage.js';
import { isGatewayError } from '../../src/core/errors.js';
import { parseLedgerQuery } from '../../src/routes/admin-console.js';
import { parseJobFilter } from '../../src/video/list-filter.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Every report and list takes its range bounds the same way: a day that is not on the calendar is a
 * 400, not the first days of the next month, and a timestamp without an offset is UTC on every
 * instance, not the server's local time.
 */
const NOW = Date.UTC(2024, 5, 15);
const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return isGatewayError(e) ? { status: e.status, param: e.param } : e;
  }
  return 'accepted';
};

describe('range bounds in reports and lists', () => {
  it('refuses a day that is not on the calendar, in a bare date and in a timestamp', () => {
    for (const bad of ['2024-02-30', '2023-02-29', '2024-04-31', '2024-06-31T00:00:00Z', '2024-02-30T10:00:00+02:00']) {
      expect(refusal(() => parseRange({ from: '2024-01-01', to: bad }, NOW)), bad).toEqual({ status: 400, param: 'to' });
      expect(refusal(() => parseJobFilter({ from: bad })), bad).toEqual({ status: 400, param: 'from' });
      expect(refusal(() => parseLedgerQuery({ to: bad })), bad).toEqual({ status: 400, param: 'to' });
    }
    // Real days still pass, 29 February of a leap year among them.
    expect(parseRange({ from: '2024-02-29', to: '2024-02-29' }, NOW)).toEqual({ from: Date.UTC(2024, 1, 29), to: Date.UTC(2024, 2, 1) });
    expect(parseJobFilter({ from: '2024-02-01T08:30:00+02:00', to: '2024-12-31' })).toMatchObject({ from: Date.UTC(2024, 1, 1, 6, 30), to: Date.UTC(2025, 0, 1) });
  });

  describe('on a server whose local time is not UTC', () => {
    const before = process.env.TZ;
    beforeAll(() => {
      process.env.TZ = 'Asia/Tokyo';
    });
    afterAll(() => {
      if (before === undefined) delete process.env.TZ;
      else process.env.TZ = before;
    });

    it('reads a timestamp without an offset as UTC, as a bare date is', () => {
      expect(new Date(2024, 0, 1).getTimezoneOffset()).toBe(-540);
      expect(parseRange({ from: '2024-01-01T00:00:00', to: '2024-01-02T00:00' }, NOW)).toEqual({ from: Date.UTC(2024, 0, 1), to: Date.UTC(2024, 0, 2) });
      expect(parseJobFilter({ to: '2024-01-01T12:00:00.250' }).to).toBe(Date.UTC(2024, 0, 1, 12, 0, 0, 250));
      expect(parseLedgerQuery({ from: '2024-01-01T00:00:00' }).from).toBe(Date.UTC(2024, 0, 1));
      // An offset, when given, still counts.
      expect(parseLedgerQuery({ from: '2024-01-01T09:00:00+09:00' }).from).toBe(Date.UTC(2024, 0, 1));
    });
  });
});

describe('over HTTP', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway({});
  });
  afterAll(async () => gw?.close());

  it('GET /v1/usage, /v1/videos, /admin/usage, /admin/jobs and the ledger answer 400 for 30 February', async () => {
    const { key, account } = await gw.newKey(1);
    const admin = { authorization: `Bearer ${gw.adminToken}` };
    for (const [path, opts] of [
      ['/v1/usage?from=2024-02-01&to=2024-02-30', { key }],
      ['/v1/videos?from=2024-02-30', { key }],
      ['/admin/usage?to=2024-02-30', { headers: admin }],
      ['/admin/jobs?to=2024-02-30T00:00:00Z', { headers: admin }],
      [`/admin/accounts/${account}/ledger?from=2024-02-30`, { headers: admin }],
    ] as const) {
      const r = await call(gw, 'GET', path, opts);
      expect(r.status, path).toBe(400);
      expect(r.json.error, path).toMatchObject({ type: 'invalid_request_error', code: 'invalid_parameter' });
    }
  });
});
