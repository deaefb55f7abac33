import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { registry } from '../../src/ops/metrics.js';

/**
 * The README's metrics table (Operations, "Metrics") lists every gateway_* metric the registry
 * serves, with its labels, and no metric it does not serve. A row may name several metrics:
 * `gateway_money_held_total`, `_captured_total` (a name starting with _ replaces the first one's
 * last word and suffix).
 */
const readme = readFileSync(resolve(__dirname, '../../README.md'), 'utf8');

function documented(): Map<string, string[]> {
  const section = readme.slice(readme.indexOf('**Metrics.**'), readme.indexOf('**Traces.**'));
  const out = new Map<string, string[]>();
  for (const line of section.split('\n')) {
    if (!line.startsWith('| `gateway_')) continue;
    const [, names, labels] = line.split('|').map((c) => c.trim()) as [string, string, string];
    const list = [...names.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    const stem = list[0]!.replace(/_[a-z]+_total$/, '');
    const labelList = labels === '' ? [] : labels.split(',').map((l) => l.trim());
    for (const n of list) out.set(n.startsWith('_') ? stem + n : n, labelList);
  }
  return out;
}

describe('README metrics table matches src/ops/metrics.ts', () => {
  it('lists every gateway_* metric with its labels, and none that does not exist', () => {
    const served = new Map<string, string[]>();
    for (const m of registry.getMetricsAsArray() as unknown as { name: string; labelNames?: readonly string[] }[]) {
      if (m.name.startsWith('gateway_')) served.set(m.name, [...(m.labelNames ?? [])]);
    }
    expect(served.size).toBeGreaterThan(10);
    expect(Object.fromEntries(documented())).toEqual(Object.fromEntries(served));
  });
});
