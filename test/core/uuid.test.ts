import { describe, expect, it } from 'vitest';
import { randomUuid, uuidV7 } from '../../src/core/uuid.js';

const V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('randomUuid', () => {
  it('makes version 4 UUIDs, as crypto.randomUUID does, all different across refills of its pool', () => {
    const ids = Array.from({ length: 1_000 }, () => randomUuid());
    for (const id of ids) expect(id).toMatch(V4);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('leaves every free digit random: each takes many values over many ids', () => {
    const seen = Array.from({ length: 36 }, () => new Set<string>());
    for (let n = 0; n < 2_000; n++) [...randomUuid()].forEach((c, i) => seen[i]!.add(c));
    seen.forEach((values, i) => {
      if ([8, 13, 18, 23].includes(i)) expect([...values]).toEqual(['-']);
      else if (i === 14) expect([...values]).toEqual(['4']);
      else if (i === 19) expect([...values].sort()).toEqual(['8', '9', 'a', 'b']);
      else expect(values.size).toBe(16);
    });
  });

  it('returns strings that later ids do not change', () => {
    const first = randomUuid();
    const copy = `${first}`;
    for (let n = 0; n < 300; n++) randomUuid();
    expect(first).toBe(copy);
  });
});

describe('uuidV7', () => {
  it('puts all 48 bits of the time first', () => {
    for (const t of [0, 1, 2 ** 32 - 1, 2 ** 32, Date.UTC(2026, 10, 25), 2 ** 48 - 1]) {
      const id = uuidV7(t);
      expect(id).toMatch(V7);
      expect(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toBe(t);
    }
  });
});
