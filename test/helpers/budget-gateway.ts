import { afterAll, afterEach, beforeAll, vi } from 'vitest';
import { BodyBudget } from '../../src/http/body-budget.js';
import type { SimServer } from '../../src/sim/framework.js';
import type { VideoVendorModule } from '../../src/video/vendors/module.js';
import { startTestGateway, type TestGateway } from './gateway.js';
import { upstreamsFor } from './video.js';

const MB = 1024 * 1024;

/**
 * A gateway on one vendor's simulator whose budget of bytes in flight (server.max_inflight_body_bytes)
 * is `budgetBytes`, and that budget itself (found as the one with that limit), to read what a create
 * holds. Tests using it restore the spy in their afterEach (`vi.restoreAllMocks()`).
 */
export async function gatewayWithBudget(module: VideoVendorModule, sim: SimServer, budgetBytes: number): Promise<{ gw: TestGateway; budget: () => BodyBudget }> {
  let found: BodyBudget | undefined;
  const tryTake = BodyBudget.prototype.tryTake;
  vi.spyOn(BodyBudget.prototype, 'tryTake').mockImplementation(function (this: BodyBudget, bytes: number) {
    if (this.limit === budgetBytes) found = this;
    return tryTake.call(this, bytes);
  });
  const gw = await startTestGateway({ ...upstreamsFor([{ module, sim }]), server: { body_limit_bytes: MB, max_inflight_body_bytes: budgetBytes } });
  return { gw, budget: () => found! };
}

/**
 * Registers a suite's hooks: one vendor simulator for the file (its tasks slow enough to stay
 * processing), the budget spy and the simulator's faults cleared after each test. Returns the
 * simulator (once started) and the gateway maker.
 */
export function budgetSuite(module: VideoVendorModule): { sim: () => SimServer; gateway: (budgetBytes: number) => Promise<{ gw: TestGateway; budget: () => BodyBudget }> } {
  let sim: SimServer | undefined;
  beforeAll(async () => {
    sim = await module.simulator.start({ taskMs: 60_000 });
  });
  afterAll(async () => {
    await sim?.close();
  });
  afterEach(() => {
    vi.restoreAllMocks();
    sim?.clearFaults();
  });
  return { sim: () => sim!, gateway: (budgetBytes) => gatewayWithBudget(module, sim!, budgetBytes) };
}
