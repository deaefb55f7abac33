import { randomUUID } from 'node:crypto';
import type { SqlDriver, SqlExecutor } from '../../src/store/driver.js';
import { createSqlStore, openStore } from '../../src/store/index.js';
import { toMicros } from '../../src/core/money.js';
import type { GatewayChildInfo } from '../children/gateway.js';
import type { Row } from '../lib/table.js';
import { VIDEO_MODEL, VIDEO_PRICE, VIDEO_UPSTREAM } from '../lib/setup.js';
import type { Endpoint } from './embeddings.js';
import { measureGatewayPolls, POLL_RATE, type PollFigures, type PollPhases } from './polls.js';
import { sealer } from './video-jobs.js';

/**
 * Section 4: the same gateway once its store holds many jobs. The jobs are written by this process
 * into the gateway's SQLite file (WAL lets both processes use it) through the Store's own
 * createJobWithHold + markJobSubmitted, in batched transactions, then polled at random.
 */

/** A driver whose statements all run inside one open transaction, so Store methods can be batched. */
function insideTransaction(tx: SqlExecutor): SqlDriver {
  return {
    dialect: 'sqlite',
    query: (sql, params) => tx.query(sql, params),
    run: (sql, params) => tx.run(sql, params),
    exec: (script) => tx.exec(script),
    transaction: (fn) => fn(tx),
    session: (fn) => fn({ ...tx, transaction: (body) => body(tx) }),
    close: async () => undefined,
  };
}

/**
 * Moves the whole WAL into the database file and empties it, as the gateway's own checkpointer
 * would have done had these jobs arrived over days. Without it the polls ran against the ~360 MB
 * of WAL that 100,000 jobs written in one go leave behind (p99 ~4x the small state's), which is the
 * cost of the bulk write, not of a store that holds many jobs.
 */
async function checkpointAll(driver: SqlDriver): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const [r] = await driver.query('PRAGMA wal_checkpoint(TRUNCATE)');
    if (r && Number(r.busy) === 0) return;
    await new Promise((done) => setTimeout(done, 20));
  }
  throw new Error('seeding: the WAL could not be checkpointed (the gateway kept a read open)');
}

/** Writes `count` processing jobs for the gateway's account; returns their public ids. */
export async function seedJobs(dbPath: string, gw: GatewayChildInfo, count: number, batch = 5_000): Promise<string[]> {
  const store = await openStore(`sqlite:${dbPath}`, { dataDir: '.' });
  const ids: string[] = [];
  const now = Date.now();
  const price = toMicros(VIDEO_PRICE);
  const hold = price * 4;
  // Far away: the gateway must serve these from the store, and the refresher must not find them due.
  const later = now + 365 * 24 * 3600 * 1000;
  try {
    for (let done = 0; done < count; done += batch) {
      const n = Math.min(batch, count - done);
      await store.driver.transaction(async (tx) => {
        const s = createSqlStore(insideTransaction(tx));
        for (let i = 0; i < n; i++) {
          const id = randomUUID();
          const taskId = `video_seed_${done + i}`;
          const created = await s.createJobWithHold(
            { id, accountId: gw.accountId, keyId: gw.keyId, model: VIDEO_MODEL, vendor: 'sora', estSeconds: 4, pricePerSecondMicros: price, request: { model: VIDEO_MODEL, prompt: `seeded job ${done + i}`, seconds: 4 }, createdAt: now, deadlineAt: later },
            hold,
            now,
          );
          if (created !== 'ok') throw new Error(`seeding: createJobWithHold answered '${created}'`);
          const publicId = sealer.seal({ j: id, a: gw.accountId, u: VIDEO_UPSTREAM, v: 'sora', m: VIDEO_MODEL, d: 4, t: taskId });
          await s.markJobSubmitted(id, { upstream: VIDEO_UPSTREAM, taskId, publicId, taskMeta: {}, nextPollAt: later, now });
          ids.push(publicId);
        }
      });
    }
    await checkpointAll(store.driver);
  } finally {
    await store.close();
  }
  return ids;
}

export async function benchScale(
  gateway: Endpoint & { info: GatewayChildInfo; dbPath: string },
  small: PollFigures,
  floor: PollFigures,
  count: number,
  phases: PollPhases,
  log: (line: string) => void,
): Promise<{ rows: Row[]; notes: string[] }> {
  const section = `Scale: ${count.toLocaleString('en-US')} jobs`;
  const t0 = performance.now();
  const ids = await seedJobs(gateway.dbPath, gateway.info, count);
  log(`${section}: seeded in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  // A different stored job on every request, spread over the whole table.
  const pick = (): string => `/v1/videos/${ids[Math.floor(Math.random() * ids.length)]!}`;
  const big = await measureGatewayPolls(gateway, pick, phases);
  log(`${section}: polls done`);

  const mb = (b: number): number => b / 2 ** 20;
  // "Unchanged within noise": at most 25% (plus 0.1 ms of timer jitter) above the small-state p99.
  const allowed = small.atRate.summary.p99 * 1.25 + 0.1;
  const rows: Row[] = [
    {
      section,
      measure: 'gateway RSS (MB)',
      floor: mb(floor.rssBytes),
      gateway: mb(big.rssBytes),
      digits: 1,
      target: { text: `<= 200 (small state: ${mb(small.rssBytes).toFixed(1)})`, met: mb(big.rssBytes) <= 200 },
    },
    {
      section,
      measure: `poll p99 at ${POLL_RATE.toLocaleString('en-US')} req/s (ms)`,
      floor: floor.atRate.summary.p99,
      gateway: big.atRate.summary.p99,
      digits: 3,
      target: { text: `<= ${allowed.toFixed(3)} (small state ${small.atRate.summary.p99.toFixed(3)} +25% +0.1)`, met: big.atRate.summary.p99 <= allowed },
    },
    {
      section,
      measure: `poll throughput, 32 connections (req/s; small state ${Math.round(small.saturation.throughput).toLocaleString('en-US')})`,
      floor: floor.saturation.throughput,
      gateway: big.saturation.throughput,
    },
  ];
  return { rows, notes: big.notes };
}
