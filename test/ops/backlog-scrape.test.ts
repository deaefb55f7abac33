import { describe, expect, it } from 'vitest';
import { scrape } from '../../src/ops/routes.js';
import type { Catalog } from '../../src/routing/catalog.js';
import type { OutboxBacklog } from '../../src/store/types.js';
import { parse, total } from './scrape.js';

/**
 * The outbox gauges' store read on /metrics: asked for with the count's cap, and shared, so that
 * scrapes arriving together (two Prometheus servers, a scrape per listener) cost one read.
 */

const catalog = { upstreams: new Map(), circuits: { stateOf: () => 'closed' } } as unknown as Catalog;

/** A store whose backlog reads are counted and answered when the test says. */
function countingStore() {
  const caps: number[] = [];
  const pending: Array<{ answer: (b: OutboxBacklog) => void; fail: (e: Error) => void }> = [];
  const store = {
    countJobsByState: async () => ({}),
    outboxBacklog: (cap: number) =>
      new Promise<OutboxBacklog>((answer, fail) => {
        caps.push(cap);
        pending.push({ answer, fail });
      }),
  };
  return { store, caps, pending };
}

describe('outbox backlog on /metrics', () => {
  it('scrapes that arrive together share one capped read', async () => {
    const { store, caps, pending } = countingStore();
    const scrapes = [scrape({ store, catalog }), scrape({ store, catalog })];
    await new Promise((r) => setImmediate(r));
    // The documented cap (README, /metrics help): the gauge reads 100,000 for any larger backlog.
    expect(caps).toEqual([100_000]);
    pending[0]!.answer({ pending: 7, oldestCreatedAt: Date.now() - 60_000 });
    for (const text of await Promise.all(scrapes)) {
      const samples = parse(text);
      expect(total(samples, 'gateway_webhook_outbox_pending')).toBe(7);
      expect(total(samples, 'gateway_webhook_outbox_oldest_pending_seconds')).toBeGreaterThanOrEqual(60);
    }
  });

  it('reads again once the last read is past its sharing window, and never keeps a failed one', async () => {
    const { sharedBacklog, BACKLOG_SHARED_MS } = await import('../../src/ops/outbox-backlog.js');
    const { store, caps, pending } = countingStore();
    let now = 1_000;
    const clock = () => now;
    const first = sharedBacklog(store, clock);
    pending[0]!.answer({ pending: 1, oldestCreatedAt: 5 });
    await first;
    now += BACKLOG_SHARED_MS - 1;
    expect(await sharedBacklog(store, clock)).toEqual({ pending: 1, oldestCreatedAt: 5 });
    expect(caps).toHaveLength(1);

    now += 1;
    const failing = sharedBacklog(store, clock);
    expect(caps).toHaveLength(2);
    pending[1]!.fail(new Error('store away'));
    await expect(failing).rejects.toThrow('store away');
    const again = sharedBacklog(store, clock);
    expect(caps).toHaveLength(3);
    pending[2]!.answer({ pending: 2, oldestCreatedAt: null });
    expect(await again).toEqual({ pending: 2, oldestCreatedAt: null });
  });

  it('joins a read still running past the window only for so long: one that never settles is not handed out for ever', async () => {
    const { sharedBacklog, sharedJobCounts } = await import('../../src/ops/outbox-backlog.js');
    const { store, caps } = countingStore();
    let now = 50_000;
    const clock = () => now;
    void sharedBacklog(store, clock);
    now += 5_000;
    void sharedBacklog(store, clock);
    expect(caps).toHaveLength(1);
    now += 5_000;
    void sharedBacklog(store, clock);
    expect(caps).toHaveLength(2);

    let counts = 0;
    const stuck = { countJobsByState: () => (counts++, new Promise<Record<string, number>>(() => undefined)) };
    void sharedJobCounts(stuck, clock);
    now += 9_999;
    void sharedJobCounts(stuck, clock);
    expect(counts).toBe(1);
    now += 1;
    void sharedJobCounts(stuck, clock);
    expect(counts).toBe(2);
  });
});
