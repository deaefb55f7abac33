import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AdminService } from './admin/service.js';
import type { ConfigFile, ModelConfig, UpstreamConfig } from './config/schema.js';
import { validateConfig } from './config/load.js';
import type { SimServer } from './sim/framework.js';
import { listenerUrl } from './http/listener-url.js';
import { videoModules } from './video/vendors/registry.js';
import { embeddingModules } from './embeddings/vendors/registry.js';

export interface Demo {
  config: ConfigFile;
  sims: SimServer[];
}

/**
 * The embedded default: every vendor simulator started on loopback, one upstream per simulator,
 * SQLite under ./data, the in-process limiter. Simulated tasks take a few seconds, like a
 * (very fast) real vendor.
 */
export async function startDemo(opts: { host: string; port: number; dataDir: string; taskMs?: number }): Promise<Demo> {
  const sims: SimServer[] = [];
  const upstreams: UpstreamConfig[] = [];
  const models: Record<string, ModelConfig> = {};
  const add = (name: string, vendor: string, sim: SimServer, d: { apiKey?: string; options: Record<string, unknown> }, names: string[]) => {
    // The request log is for tests that drive a simulator; kept here, in the gateway's process, it
    // would hold every upstream request body (raw and parsed) for as long as the gateway runs.
    sim.record = false;
    upstreams.push({
      // Within the default shutdown grace (25 s, less the cut margin): no call outlasts a drain.
      name, vendor, base_url: sim.url, api_key: d.apiKey, models: names, priority: 1, weight: 1, timeout_ms: 20_000, enabled: true, ...d.options,
    } as UpstreamConfig);
  };
  try {
    for (const m of videoModules) {
      const sim = await m.simulator.start({ taskMs: opts.taskMs ?? 6_000 });
      sims.push(sim);
      const d = m.simulator.demo(sim);
      for (const model of d.models) models[model.name] = { capabilities: ['video'], price: { per_second: model.pricePerSecond }, description: model.description };
      add(`${m.vendor.id}-sim`, m.vendor.id, sim, d, d.models.map((x) => x.name));
    }
    for (const m of embeddingModules) {
      const sim = await m.simulator.start({});
      sims.push(sim);
      const d = m.simulator.demo(sim);
      for (const model of d.models) {
        models[model.name] = {
          capabilities: model.capabilities ?? ['embedding'],
          price: {
            per_million_input_tokens: model.pricePerMillionInput,
            ...(model.pricePerMillionOutput !== undefined ? { per_million_output_tokens: model.pricePerMillionOutput } : {}),
          },
          description: model.description,
        };
      }
      add(`${m.id}-sim`, m.id, sim, d, d.models.map((x) => x.name));
    }
    const config = validateConfig(
      {
        // Set explicitly (to what it would default to) so the simulators call back into the gateway.
        // With port 0 it takes the port the OS chose once the server listens (Services.listening).
        server: { host: opts.host, port: opts.port, public_url: listenerUrl(opts.host, opts.port) },
        database: `sqlite:${join(opts.dataDir, 'gateway.db')}`,
        data_dir: opts.dataDir,
        // Only the simulators' own loopback origins are reachable by the media fetcher, never private
        // networks in general: started with HOST=0.0.0.0 this must not become an open proxy to them.
        video: { poll_interval_ms: 2_000, media: { allowed_origins: sims.map((s) => s.url) } },
        upstreams,
        models,
      },
      '(embedded default)',
    );
    return { config, sims };
  } catch (e) {
    // A simulator that could not start, or a HOST the config refuses: the ones started would keep
    // the process alive after the error.
    await Promise.all(sims.map((s) => s.close().catch(() => undefined)));
    throw e;
  }
}

/** The demo account and key: created on the first start, kept (key in the data dir) across restarts. */
export async function ensureDemoKey(admin: AdminService, dataDir: string): Promise<string> {
  const file = join(dataDir, 'demo-key');
  const accounts = await admin.listAccounts();
  const existing = accounts.find((a) => a.name === 'demo');
  if (existing && existsSync(file)) return readFileSync(file, 'utf8').trim();
  if (!existing) await admin.createAccount('demo', { balance: 100 });
  const { key } = await admin.createKey({ account: 'demo', name: 'demo key' });
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}
