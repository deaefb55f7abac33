import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfigFile } from '../../src/config/load.js';
import { Catalog } from '../../src/routing/catalog.js';

function write(text: string): string {
  const p = join(mkdtempSync(join(tmpdir(), 'cfg-')), 'gateway.yaml');
  writeFileSync(p, text);
  return p;
}

const good = `
server: { host: 127.0.0.1, port: 8080 }
database: sqlite:./data/gateway.db
secret: \${TEST_SECRET}
upstreams:
  - name: sora-main
    vendor: sora
    base_url: https://api.openai.com/
    api_key: \${TEST_OPENAI_KEY}
    models: [sora-2]
    priority: 1
    weight: 1
    timeout_ms: 30000
    project: p1
models:
  sora-2: { capabilities: [video], price: { per_second: 0.10 } }
  text-embedding-3-small: { capabilities: [embedding], price: { per_million_input_tokens: 0.02 } }
`;

describe('config', () => {
  it('loads YAML, substitutes ${ENV}, converts money to micros and keeps vendor options', () => {
    const cfg = loadConfigFile(write(good), { TEST_SECRET: 's'.repeat(20), TEST_OPENAI_KEY: 'sk-abc' });
    expect(cfg.secret).toBe('s'.repeat(20));
    expect(cfg.upstreams[0]!.api_key).toBe('sk-abc');
    const cat = new Catalog(cfg);
    expect(cat.model('sora-2')!.price.perSecond).toBe(100_000);
    expect(cat.model('text-embedding-3-small')!.price.perMillionInput).toBe(20_000);
    expect(cat.upstream('sora-main')!.baseUrl).toBe('https://api.openai.com');
    // A price the ledger cannot hold exactly stops the start, naming the model and the key.
    const finer = { ...cfg, models: { ...cfg.models, 'sora-2': { ...cfg.models['sora-2']!, price: { per_second: 0.0000001 } } } };
    expect(() => new Catalog(finer)).toThrow(/^models\.sora-2\.price\.per_second: the amount 1e-7 has more than 6 decimal places/);
    expect(cat.upstream('sora-main')!.options).toEqual({ project: 'p1' });
  });

  it("reads a chat model's max_output_tokens and the default output allowance of uncapped chat requests", () => {
    expect(loadConfigFile(write(good), {}).chat.default_output_reserve_tokens).toBe(4096);
    const chatModel = `${good}  gpt-4o: { capabilities: [chat], price: { per_million_input_tokens: 2.5 }, max_output_tokens: 16384 }\nchat: { default_output_reserve_tokens: 0 }\n`;
    const cfg = loadConfigFile(write(chatModel), {});
    expect(cfg.chat.default_output_reserve_tokens).toBe(0);
    expect(new Catalog(cfg).model('gpt-4o')!.maxOutputTokens).toBe(16_384);
    expect(new Catalog(cfg).model('text-embedding-3-small')!.maxOutputTokens).toBeUndefined();
    expect(() => loadConfigFile(write(chatModel.replace('16384', '0')), {})).toThrow(/models\.gpt-4o\.max_output_tokens/);
    expect(() => loadConfigFile(write(chatModel.replace('reserve_tokens: 0', 'reserve_tokens: -1')), {})).toThrow(/chat\.default_output_reserve_tokens/);
  });

  it('treats an unset secret as absent', () => {
    expect(loadConfigFile(write(good), {}).secret).toBeUndefined();
  });

  it('names the file and the key in validation errors', () => {
    const p = write(good.replace('port: 8080', 'port: "eighty"'));
    expect(() => loadConfigFile(p, {})).toThrow(new RegExp(`${p.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: server.port`));
    expect(() => loadConfigFile(write(good.replace('models: [sora-2]', 'models: [nope]')), {})).toThrow(/upstreams\[0\]\.models\[0\]: model 'nope'/);
    expect(() => loadConfigFile(write(good.replace('{ per_second: 0.10 }', '{}')), {})).toThrow(/models\.sora-2\.price\.per_second/);
    expect(() => loadConfigFile(write(good + '\nbogus: 1\n'), {})).toThrow(/bogus/);
    expect(() => loadConfigFile(write('a: [unclosed'), {})).toThrow(/not valid YAML/);
  });

  it('refuses a webhook delivery timeout the shutdown drain cannot wait out, naming both settings', () => {
    // The defaults fit: 10 s deliveries within a 25 s drain.
    expect(() => loadConfigFile(write(good), {})).not.toThrow();
    const longer = `${good}webhooks: { timeout_ms: 26000 }\n`;
    const p = write(longer);
    expect(() => loadConfigFile(p, {})).toThrow(
      new RegExp(`${p.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: webhooks\\.timeout_ms: 26000 must be less than server\\.shutdown_timeout_ms \\(25000\\)`),
    );
    // As long as the drain is as bad: the process exits when the delivery may still be running.
    expect(() => loadConfigFile(write(good.replace('port: 8080', 'port: 8080, shutdown_timeout_ms: 10000')), {})).toThrow(
      /webhooks\.timeout_ms: 10000 must be less than server\.shutdown_timeout_ms \(10000\)/,
    );
    // Fixed from either side, or moot on an instance that delivers nothing.
    expect(loadConfigFile(write(longer.replace('port: 8080', 'port: 8080, shutdown_timeout_ms: 40000')), {}).webhooks.timeout_ms).toBe(26_000);
    expect(loadConfigFile(write(good.replace('port: 8080', 'port: 8080, shutdown_timeout_ms: 10001')), {}).server.shutdown_timeout_ms).toBe(10_001);
    expect(loadConfigFile(write(longer.replace('timeout_ms: 26000', 'timeout_ms: 26000, interval_ms: 0')), {}).webhooks.interval_ms).toBe(0);
  });

  it('orders candidates by priority, then weight, skipping open circuits', () => {
    const cfg = loadConfigFile(write(good), {});
    const ups = ['a', 'b', 'c'].map((n, i) => ({ ...cfg.upstreams[0]!, name: n, priority: i === 2 ? 0 : 1, weight: n === 'a' ? 1000 : 1 }));
    const cat = new Catalog({ ...cfg, upstreams: ups });
    const acct = { id: 'x', name: 'x', balance: 0, upstreams: null, limits: {}, createdAt: 0 };
    const first = new Map<string, number>();
    for (let i = 0; i < 200; i++) {
      const order = cat.candidates('sora-2', acct).map((u) => u.name);
      expect(order[0]).toBe('c');
      first.set(order[1]!, (first.get(order[1]!) ?? 0) + 1);
    }
    expect(first.get('a')!).toBeGreaterThan(180);
    for (let i = 0; i < 5; i++) cat.circuits.failure('c');
    expect(cat.candidates('sora-2', acct).map((u) => u.name).at(-1)).toBe('c');
    expect(cat.candidates('sora-2', { ...acct, upstreams: ['b'] }).map((u) => u.name)).toEqual(['b']);
  });
});
