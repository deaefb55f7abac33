import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAmount } from '../../src/admin/service.js';
import { toMicros } from '../../src/core/money.js';
import { call, startTestGateway, type TestGateway } from '../helpers/gateway.js';

/**
 * Amounts the admin API, the CLI and the console take: plain decimal numbers of currency units with
 * at most 6 decimals (the ledger counts whole micro-units), and never past what a balance can hold.
 */
let gw: TestGateway;
const admin = (method: string, path: string, body?: unknown) => call(gw, method, path, { key: gw.adminToken, body });

beforeAll(async () => {
  gw = await startTestGateway({});
});
afterAll(async () => gw?.close());

describe('amounts', () => {
  it('takes plain decimals (string or JSON number) exactly, and refuses anything else naming the field', () => {
    const ok: [unknown, number][] = [
      ['20', 20_000_000], ['5.5', 5_500_000], [5.5, 5_500_000], ['0.000001', 1], [0.000001, 1], ['0', 0], [0, 0],
      [' 7.25 ', 7_250_000], ['007', 7_000_000], ['1.100000', 1_100_000], [1.1, 1_100_000], [0.07, 70_000],
      ['9007199254.740991', Number.MAX_SAFE_INTEGER], [300_000, 300_000_000_000],
    ];
    for (const [v, micros] of ok) expect(parseAmount(v, 'amount'), JSON.stringify(v)).toBe(micros);
    // Anything else is refused: hex, exponents, blanks, signs, separators, more than 6 decimals, sub-micro numbers.
    const bad: unknown[] = [
      '0x10', '1e3', '1E3', '', '  ', '+5', '-1', -1, '1,000', '1_000', '.5', '5.', '1.0000005', '1.0000000', 1.0000005, 5e-7, 1.5e-7,
      'Infinity', '-Infinity', 'NaN', Infinity, NaN, '9007199254.740992', 9007199255, 1e21, '١٢', '5 5', '0b1', '0o7', true, null, {}, [],
    ];
    for (const v of bad) {
      let err: any;
      try {
        parseAmount(v, 'budget.total');
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(v) ?? String(v)).toBeDefined();
      expect(err.status, String(v)).toBe(400);
      expect(err.param, String(v)).toBe('budget.total');
      expect(err.message, String(v)).toContain("'budget.total'");
    }
  });

  it('toMicros (configured prices) follows the same rules', () => {
    expect(toMicros(0.02)).toBe(20_000);
    expect(toMicros('5.5')).toBe(5_500_000);
    for (const v of ['0x10', '1e3', '  ', '1.0000005', 1.0000005, 5e-7]) expect(() => toMicros(v as never), String(v)).toThrow();
  });
});

describe('the admin API', () => {
  it('refuses malformed amounts in every money field with 400 naming it, and takes the documented ones', async () => {
    await admin('POST', '/admin/accounts', { name: 'money-a' });
    const cases: [string, string, unknown, string][] = [
      ['POST', '/admin/accounts', { name: 'money-hex', balance: '0x10' }, 'balance'],
      ['POST', '/admin/accounts', { name: 'money-exp', balance: '1e3' }, 'balance'],
      ['POST', '/admin/accounts', { name: 'money-blank', balance: '  ' }, 'balance'],
      ['POST', '/admin/accounts', { name: 'money-tiny', balance: 0.0000005 }, 'balance'],
      ['POST', '/admin/accounts/money-a/topup', { amount: '1.0000005' }, 'amount'],
      ['POST', '/admin/accounts/money-a/topup', { amount: 1.5e-7 }, 'amount'],
      ['POST', '/admin/keys', { account: 'money-a', budget: { period: 'day', period_limit: '0x1' } }, 'budget.period_limit'],
      ['POST', '/admin/keys', { account: 'money-a', budget: { total: '1e2' } }, 'budget.total'],
    ];
    for (const [method, path, body, param] of cases) {
      const r = await admin(method, path, body);
      expect(r.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(r.json.error, JSON.stringify(body)).toMatchObject({ type: 'invalid_request_error', param });
    }
    for (const name of ['money-hex', 'money-exp', 'money-blank', 'money-tiny']) expect((await admin('GET', `/admin/accounts/${name}`)).status).toBe(404);
    expect((await admin('GET', '/admin/accounts/money-a')).json.balance_micros).toBe(0);

    // The documented examples still work: "20", "5.5", a budget of "10" with a daily "2".
    const created = await admin('POST', '/admin/accounts', { name: 'money-docs', balance: '20' });
    expect(created.json.balance_micros).toBe(20_000_000);
    expect((await admin('POST', '/admin/accounts/money-docs/topup', { amount: '5.5', note: 'invoice 43' })).json.balance).toBe('25.500000');
    expect((await admin('POST', '/admin/accounts/money-docs/topup', { amount: 5.5 })).json.balance).toBe('31.000000');
    const key = await admin('POST', '/admin/keys', { account: 'money-docs', budget: { total: '10', period: 'day', period_limit: '2' } });
    expect(key.status, key.text).toBe(201);
    expect(key.json.budget).toEqual({ total: '10.000000', period: 'day', period_limit: '2.000000' });
  });

  it('a top-up that would take the balance past the largest storable amount is a 400, not a 500', async () => {
    const big = await admin('POST', '/admin/accounts', { name: 'money-big', balance: '9007199254' });
    expect(big.status, big.text).toBe(201);
    const r = await admin('POST', '/admin/accounts/money-big/topup', { amount: '9007199254' });
    expect(r.status, r.text).toBe(400);
    expect(r.json.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_parameter', param: 'amount' });
    expect(r.json.error.message).toContain('9007199254.740991');
    // Up to the limit itself is fine; nothing was changed by the refusal.
    const top = await admin('POST', '/admin/accounts/money-big/topup', { amount: '0.740991' });
    expect(top.status, top.text).toBe(200);
    expect(top.json.balance_micros).toBe(Number.MAX_SAFE_INTEGER);
    expect((await admin('POST', '/admin/accounts/money-big/topup', { amount: '0.000001' })).status).toBe(400);
    // Concurrent top-ups that each fit alone but not together: one lands, the other is a 400.
    await admin('POST', '/admin/accounts', { name: 'money-race', balance: '9000000000' });
    const both = await Promise.all([1, 2].map(() => admin('POST', '/admin/accounts/money-race/topup', { amount: '5000000' })));
    expect(both.map((x) => x.status).sort()).toEqual([200, 400]);
  });
});
