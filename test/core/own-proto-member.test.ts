import { describe, expect, it } from 'vitest';
import { omit, type JsonObject } from '../../src/core/json.js';
import { redactJson } from '../../src/core/redact.js';
import { boundVendorData } from '../../src/core/vendor-data.js';

/**
 * A vendor answer may hold a member named `__proto__` (JSON.parse makes it an ordinary own
 * property). vendor_data comes back losslessly, so every copy made on its way (redaction, the
 * standard fields taken out, the size bound) keeps it as a member, never as a prototype.
 */
const parsed = (): JsonObject => JSON.parse('{"status":"done","__proto__":{"polluted":true,"n":1},"x":2}') as JsonObject;

describe('a vendor member named __proto__', () => {
  it('survives redaction as an own member', () => {
    const out = redactJson(parsed());
    expect(JSON.parse(JSON.stringify(out))).toEqual(JSON.parse('{"status":"done","__proto__":{"polluted":true,"n":1},"x":2}'));
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect((out as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('survives omit', () => {
    const out = omit(parsed(), ['status']);
    expect(JSON.stringify(out)).toBe('{"__proto__":{"polluted":true,"n":1},"x":2}');
    expect((out as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('survives the size bound of vendor_data', () => {
    const data = parsed();
    data.big = 'y'.repeat(100_000);
    const out = boundVendorData(data, 8192) as JsonObject;
    expect(JSON.stringify(out)).toContain('"__proto__":{"polluted":true,"n":1}');
    expect((out as Record<string, unknown>).polluted).toBeUndefined();
  });
});
