import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import type { JsonObject } from '../../src/core/json.js';
import { Executor } from '../../src/http/executor.js';
import type { Upstream } from '../../src/http/types.js';
import { sleep, type SimServer } from '../../src/sim/framework.js';
import type { CreateInput, TaskRef, VendorStatus } from '../../src/video/types.js';
import type { VideoVendorModule } from '../../src/video/vendors/module.js';

/** A vendor's adapter driving its own simulator over real HTTP, through the executor. */
export interface OverHttp {
  sim: SimServer;
  /** The upstream the embedded default would configure for this simulator. */
  up: Upstream;
  ex: Executor;
  /** Validates, sends the create and reads the task reference (a non-200 answer fails the test). */
  create(ci: CreateInput): Promise<TaskRef>;
  /** Polls until a final state; `seen` holds every native status the answers carried. */
  settle(task: TaskRef): Promise<{ final: VendorStatus; seen: Set<string> }>;
}

/**
 * Registers the suite's hooks (start the simulator and an executor, reset the simulator before each
 * test with a fast task time, close both at the end) and returns the handle the tests use.
 * `statusOf` reads the vendor's native status out of a poll answer.
 */
export function overHttp(module: VideoVendorModule, opts: { apiKey: string; statusOf: (json: JsonObject) => unknown }): OverHttp {
  const vendor = module.vendor;
  const t = { ex: new Executor() } as OverHttp;
  beforeAll(async () => {
    t.sim = await module.simulator.start({ taskMs: 80, apiKey: opts.apiKey });
    const demo = module.simulator.demo(t.sim);
    t.up = {
      name: `${vendor.id}-sim`,
      vendor: vendor.id,
      baseUrl: t.sim.url,
      apiKey: demo.apiKey,
      models: demo.models.map((m) => m.name),
      priority: 0,
      weight: 1,
      timeoutMs: 5000,
      options: demo.options,
    };
  });
  afterAll(async () => {
    await t.sim.close();
    await t.ex.close();
  });
  beforeEach(() => {
    t.sim.reset();
    t.sim.settings.taskMs = 80;
    delete t.sim.settings.videoBytes;
  });
  t.create = async (ci) => {
    vendor.validate?.(ci);
    const r = await t.ex.send(vendor.buildCreate(ci, t.up), 5000);
    expect(r.status, r.text).toBe(200);
    const { taskId, meta } = vendor.parseCreate(r, ci, t.up);
    return { taskId, model: ci.model, upstreamModel: ci.upstreamModel, meta: meta ?? {} };
  };
  t.settle = async (task) => {
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const r = await t.ex.send(vendor.buildPoll(task, t.up), 5000);
      expect(r.status).toBe(200);
      seen.add(String(opts.statusOf(r.json as JsonObject)));
      const st = vendor.parsePoll(r, task, t.up);
      if ('next' in st) throw new Error('unexpected follow-up');
      if (st.state !== 'processing') return { final: st, seen };
      await sleep(10);
    }
    throw new Error('task never finished');
  };
  return t;
}
