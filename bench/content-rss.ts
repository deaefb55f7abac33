import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileChildren } from './lib/compile.js';
import { killAll, onExit, useCompiledChildren } from './lib/children.js';
import { rssBytes } from './lib/proc.js';
import { startGateway, startSim, videoGatewayConfig, type BenchRun } from './lib/setup.js';
import { contentPath, MB, measureDownload } from './sections/download.js';
import { createVideoJob, waitForStatus } from './sections/video-jobs.js';

/**
 * Checks one claim on its own: streaming a 200 MB simulated video through
 * GET /v1/videos/{id}/content raises the gateway's RSS by less than 50 MB (the body is piped with
 * backpressure, never buffered). Runs a Sora simulator and a gateway in child processes, downloads
 * the video three times (one ranged warm-up, two timed), prints the peak RSS over the gateway's RSS
 * before the first byte, and exits 1 when the limit is exceeded.
 *
 *   node --import tsx bench/content-rss.ts
 */
const SIZE = 200 * MB;
const LIMIT = 50 * MB;

setTimeout(() => {
  process.stderr.write('content-rss: exceeded its 120 s cap; stopping\n');
  killAll();
  process.exit(2);
}, 120_000).unref();

const run: BenchRun = { dir: mkdtempSync(join(tmpdir(), 'gw-content-rss-')) };
onExit(() => rmSync(run.dir, { recursive: true, force: true }));

async function main(): Promise<number> {
  useCompiledChildren(process.argv.includes('--tsx') ? undefined : await compileChildren());
  const sim = await startSim('sora simulator', { kind: 'sora', taskMs: 0, videoBytes: SIZE });
  const gw = await startGateway(run, 'gateway', videoGatewayConfig(run, 'gateway', sim.info, 0));
  try {
    const job = await createVideoJob(gw.info);
    await waitForStatus(gw.info, job.id, 'completed', 15_000);
    const idle = rssBytes(gw.pid);
    const f = await measureDownload({ origin: gw.info.url, pid: gw.pid, token: gw.info.key }, contentPath('gateway', job), SIZE, 2);
    const growth = f.rssGrowthBytes / MB;
    const ok = f.rssGrowthBytes < LIMIT;
    process.stdout.write(
      `Streaming a ${SIZE / MB} MB simulated video (3 times) raised the gateway's RSS by ${growth.toFixed(1)} MB ` +
        `(limit ${LIMIT / MB} MB; RSS before ${(idle / MB).toFixed(1)} MB; ${f.mbPerSecond.toFixed(0)} MB/s): ${ok ? 'met' : 'MISSED'}\n`,
    );
    return ok ? 0 : 1;
  } finally {
    await Promise.all([gw.stop(), sim.stop()]);
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`content-rss: ${(e as Error).stack ?? String(e)}\n`);
    killAll();
    process.exit(1);
  },
);
