import { LoadClient, withCap, type RequestSpec } from '../lib/load.js';
import { peakRssBytes, resetPeakRss, rssBytes, sampleRss } from '../lib/proc.js';
import type { Row } from '../lib/table.js';
import { median } from '../lib/stats.js';
import type { Endpoint } from './embeddings.js';
import type { PathName } from './paths.js';
import type { VideoJob } from './video-jobs.js';

/**
 * Section 3: one large video, downloaded whole, on each path. Throughput is bytes over wall time
 * at the client (median of the repeats); memory is the highest RSS of the serving process while it
 * streamed minus its RSS just before (VmHWM reset through clear_refs, plus 5 ms sampling in case
 * the reset is refused).
 */
export const MB = 2 ** 20;

export interface DownloadFigures {
  mbPerSecond: number;
  rssGrowthBytes: number;
}

export function contentPath(name: PathName, job: VideoJob): string {
  return name === 'gateway' ? `/v1/videos/${job.id}/content` : `/v1/videos/${job.taskId}/content`;
}

/**
 * Downloads `size` bytes from `path` `repeats` times after a warm-up: the whole video once as a
 * ranged request, because the streaming path keeps getting faster over the first few hundred MB as
 * the JIT optimises it. Memory growth is counted from the process's RSS before the warm-up:
 * whatever streaming costs, the first bytes included.
 */
export async function measureDownload(e: Endpoint, path: string, size: number, repeats: number): Promise<DownloadFigures> {
  const client = new LoadClient(e.origin, 1);
  const headers = { authorization: `Bearer ${e.token}` };
  const before = rssBytes(e.pid);
  const hwmReset = resetPeakRss(e.pid);
  const sampler = sampleRss(e.pid, 5);
  try {
    const warm = await withCap(client.send({ method: 'GET', path, headers: { ...headers, range: `bytes=0-${size - 1}` } }, 0), 60_000, `download warm-up via ${e.origin}`);
    if (warm.status !== 206 || warm.bytes !== size) throw new Error(`download warm-up via ${e.origin}: HTTP ${warm.status}, ${warm.bytes} bytes`);
    const speeds: number[] = [];
    const spec: RequestSpec = { method: 'GET', path, headers };
    for (let r = 0; r < repeats; r++) {
      const t0 = performance.now();
      // At 50 MB/s a 200 MB body takes 4 s; anything past a minute is a broken path.
      const res = await withCap(client.send(spec, r), 60_000, `download via ${e.origin}`);
      const seconds = (performance.now() - t0) / 1000;
      if (res.status !== 200 || res.bytes !== size) throw new Error(`download via ${e.origin}: HTTP ${res.status}, ${res.bytes} of ${size} bytes`);
      speeds.push(size / MB / seconds);
    }
    const peak = Math.max(sampler.stop(), hwmReset ? peakRssBytes(e.pid) : 0);
    return { mbPerSecond: median(speeds), rssGrowthBytes: peak - before };
  } finally {
    sampler.stop();
    await client.close();
  }
}

export async function benchDownload(
  endpoints: Record<PathName, Endpoint>,
  job: VideoJob,
  size: number,
  repeats: number,
  log: (line: string) => void,
): Promise<Row[]> {
  const section = `Download (${Math.round(size / MB)} MB)`;
  const f = {} as Record<PathName, DownloadFigures>;
  for (const name of ['direct', 'floor', 'gateway'] as const) {
    f[name] = await measureDownload(endpoints[name], contentPath(name, job), size, repeats);
    log(`${section}: ${name} ${f[name].mbPerSecond.toFixed(0)} MB/s, RSS +${(f[name].rssGrowthBytes / MB).toFixed(1)} MB`);
  }
  return [
    {
      section,
      measure: 'throughput (MB/s)',
      direct: f.direct.mbPerSecond,
      floor: f.floor.mbPerSecond,
      gateway: f.gateway.mbPerSecond,
      target: { text: `>= 500 (floor: ${f.floor.mbPerSecond.toFixed(0)})`, met: f.gateway.mbPerSecond >= 500 },
    },
    {
      section,
      measure: 'peak RSS growth (MB)',
      direct: f.direct.rssGrowthBytes / MB,
      floor: f.floor.rssGrowthBytes / MB,
      gateway: f.gateway.rssGrowthBytes / MB,
      digits: 1,
      target: { text: '<= 50', met: f.gateway.rssGrowthBytes / MB <= 50 },
    },
  ];
}
