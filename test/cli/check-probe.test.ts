import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UpstreamConfig } from '../../src/config/schema.js';
import { startDemo, type Demo } from '../../src/demo.js';
import { cli } from './harness.js';

/** Each upstream's credential made wrong, whatever form it takes for that vendor. */
function withWrongCredential(u: UpstreamConfig): UpstreamConfig {
  const o = u as unknown as Record<string, unknown>;
  if (typeof o['secret_access_key'] === 'string') return { ...u, secret_access_key: 'wrong/secret' } as UpstreamConfig;
  if (typeof o['access_token'] === 'string') return { ...u, access_token: 'ya29.wrong-token' } as UpstreamConfig;
  if (o['service_account']) {
    const sa = o['service_account'] as Record<string, unknown>;
    return { ...u, service_account: { ...sa, client_email: 'someone-else@other-project.iam.gserviceaccount.com' } } as UpstreamConfig;
  }
  return { ...u, api_key: 'wrong-key' };
}

interface Row { name: string; vendor: string; result: string; status?: number; latencyMs: number; detail?: string }

describe('gateway check --probe against the simulators', () => {
  let demo: Demo;
  let dir: string;
  const write = (upstreams: UpstreamConfig[]) => {
    const file = join(dir, `gateway-${Math.random().toString(36).slice(2)}.yaml`);
    // YAML is a superset of JSON: the embedded default's upstreams and models, pointed at its simulators.
    writeFileSync(file, JSON.stringify({ database: `sqlite:${join(dir, 'g.db')}`, data_dir: dir, upstreams, models: demo.config.models }));
    return file;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gw-probe-'));
    demo = await startDemo({ host: '127.0.0.1', port: 0, dataDir: dir, taskMs: 300 });
  });
  afterAll(async () => {
    await Promise.all(demo.sims.map((s) => s.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('every upstream of the embedded default answers: exit 0, one table row each', async () => {
    const r = await cli('check', '--config', write(demo.config.upstreams), '--probe');
    expect(r.code, r.err).toBe(0);
    const lines = r.out.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^UPSTREAM\s+VENDOR\s+RESULT\s+LATENCY$/);
    expect(lines).toHaveLength(demo.config.upstreams.length + 1);
    for (const u of demo.config.upstreams) expect(r.out).toMatch(new RegExp(`^${u.name}\\s+${u.vendor}\\s+answers\\s+\\d+ ms$`, 'm'));
    const json = await cli('check', '--config', write(demo.config.upstreams), '--probe', '--json');
    expect(json.code, json.err).toBe(0);
    const rows = JSON.parse(json.out).probe as Row[];
    expect(rows.map((x) => x.result)).toEqual(demo.config.upstreams.map(() => 'answers'));
    for (const x of rows) expect([200, 404]).toContain(x.status);
  });

  it('one upstream with a wrong key is refused: exit 3, its row says refused, the others still answer', async () => {
    const ups = demo.config.upstreams.map((u) => (u.vendor === 'sora' ? withWrongCredential(u) : u));
    const r = await cli('check', '--config', write(ups), '--probe');
    expect(r.code).toBe(3);
    expect(r.out).toMatch(/^sora-sim\s+sora\s+refused \(HTTP 401\)\s+\d+ ms$/m);
    expect(r.out.match(/\banswers\b/g)).toHaveLength(ups.length - 1);
    expect(r.err).toMatch(/1 of \d+ upstreams did not answer: sora-sim refused/);
    expect(r.out + r.err).not.toContain('wrong-key');
  });

  it('every simulator refuses a wrong credential on its probe call', async () => {
    const r = await cli('check', '--config', write(demo.config.upstreams.map(withWrongCredential)), '--probe', '--json');
    expect(r.code).toBe(3);
    const rows = JSON.parse(r.out).probe as Row[];
    for (const row of rows) expect(row, row.name).toMatchObject({ result: 'refused' });
    expect(r.out).not.toMatch(/wrong-key|ya29\.wrong|wrong\/secret/);
  });

  it('an upstream that is not listening fails the probe (exit 1) within the probe timeout', async () => {
    const ups = demo.config.upstreams.map((u) => (u.vendor === 'wan' ? { ...u, base_url: 'http://127.0.0.1:9' } : u));
    const r = await cli('check', '--config', write(ups), '--probe', '--json');
    expect(r.code).toBe(1);
    const row = (JSON.parse(r.out).probe as Row[]).find((x) => x.name === 'wan-sim')!;
    expect(row.result).toBe('failed');
    expect(row.status).toBeUndefined();
  });
});
