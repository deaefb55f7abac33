import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, get } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort, killLeftover, startGatewayProcess, waitFor, type GatewayProcess } from '../helpers/process.js';
import { PG_URL } from '../store/harness.js';

/**
 * SIGTERM while Prometheus's scrape of the separate metrics listener (`metrics.port`) is still
 * waiting on the store: the scrape is answered, and the process exits 0 right after, instead of
 * waiting for the scraper's keep-alive connection to time out (72 s) and being ended by the drain
 * deadline with exit code 1.
 */
const SCHEMA = `gw_metrics_close_${randomBytes(4).toString('hex')}`;
/** Far below both the keep-alive timeout and the drain deadline, well past a drain on a busy machine. */
const PROMPT_MS = 10_000;
let dir: string;
let gw: GatewayProcess | undefined;
let locker: pg.Client | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gw-metrics-close-'));
});
afterAll(async () => {
  await killLeftover(gw);
  await locker?.end().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
  await client.end();
});

/** True when a new TCP connection to `port` is refused. */
function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect({ port, host: '127.0.0.1' });
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code === 'ECONNREFUSED'));
  });
}

function scrape(url: string, agent: Agent): Promise<{ status: number; body: string; connection: string | undefined }> {
  return new Promise((resolve, reject) => {
    get(url, { agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

it('SIGTERM during a scrape held by the store: the scrape is answered and the process exits 0 without waiting for its connection', async () => {
  const metricsPort = await freePort();
  gw = await startGatewayProcess(dir, {
    database: `${PG_URL}?schema=${SCHEMA}`,
    data_dir: join(dir, 'data'),
    admin_token: 'metrics-close-admin-token-0123456789',
    secret: 'metrics-close-secret-0123456789abcdef',
    server: { shutdown_timeout_ms: 60_000 },
    metrics: { enabled: true, host: '127.0.0.1', port: metricsPort },
    // Nothing but the scrape reads the jobs table while it is locked.
    video: { refresher_interval_ms: 0 },
  });
  const url = `http://127.0.0.1:${metricsPort}/metrics`;
  // Prometheus keeps its connection to the target open between scrapes.
  const agent = new Agent({ keepAlive: true });
  try {
    expect((await scrape(url, agent)).status).toBe(200);

    locker = new pg.Client({ connectionString: PG_URL, options: `-c search_path=${SCHEMA}` });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE');
    const held = scrape(url, agent);
    await waitFor(async () => {
      const r = await locker!.query(
        `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation JOIN pg_namespace s ON s.oid = c.relnamespace
         WHERE s.nspname = $1 AND c.relname = 'jobs' AND NOT l.granted`,
        [SCHEMA],
      );
      return r.rows[0].n > 0;
    }, 'the scrape to wait on the jobs table');

    gw.child.kill('SIGTERM');
    // The metrics listener has begun closing while the scrape is still being answered.
    await waitFor(() => refused(metricsPort), 'the metrics listener to refuse new connections', 10_000, 10);
    await locker.query('COMMIT');
    const answer = await held;
    expect(answer.status).toBe(200);
    expect(answer.body).toContain('gateway_video_jobs');

    const exit = await Promise.race([gw.exited, new Promise((r) => setTimeout(() => r('still running'), PROMPT_MS))]);
    expect(exit, gw.output.slice(-5).join('\n')).toBe(0);
    expect(gw.output.some((l) => l.includes('shutdown complete'))).toBe(true);
  } finally {
    agent.destroy();
  }
}, 40_000);
