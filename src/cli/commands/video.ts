import type { Command } from 'commander';
import type { CliCommand, Runner } from '../command.js';
import { apiClient, clientOptions, printJson, type ClientFlags } from '../client/options.js';
import { downloadVideo } from '../client/download.js';
import { applyParam, imageUrl, positiveInteger, positiveNumber } from '../client/params.js';
import { printable } from '../text.js';
import { clientTiming } from '../client/timing.js';
import { failedJobError, videoPath, waitForJob, type VideoJob } from '../client/wait.js';
import { EXIT } from '../exit.js';
import { LARGEST_VIDEO_BYTES } from '../../video/largest-video.js';
import { writeOut } from '../output.js';

interface CreateFlags extends ClientFlags {
  model: string;
  prompt: string;
  seconds?: number;
  size?: string;
  image?: string;
  param: string[];
  wait?: boolean;
  output?: string;
  maxBytes?: number;
}

const collect = (v: string, prev: string[]) => [...prev, v];
const out = (line: string) => writeOut(`${line}\n`);
const note = (line: string) => process.stderr.write(`${line}\n`);

/** Human summary of a job: one "field: value" line each, nothing a terminal would interpret. */
function describe(job: VideoJob): string {
  const rows: [string, unknown][] = [
    ['id', job.id],
    ['status', job.status],
    ['model', job.model],
    ['seconds', job.seconds],
    ['progress', job.progress === undefined ? undefined : `${job.progress}%`],
    ['error', job.error ? `${job.error.code ?? ''}: ${job.error.message ?? ''}` : undefined],
  ];
  return rows.filter(([, v]) => v !== undefined).map(([k, v]) => `${k}: ${printable(String(v))}`).join('\n');
}

async function create(o: CreateFlags): Promise<number> {
  const api = apiClient(o);
  const timing = clientTiming();
  const body: Record<string, unknown> = {};
  for (const p of o.param) applyParam(body, p);
  Object.assign(body, { model: o.model, prompt: o.prompt });
  if (o.seconds !== undefined) body.seconds = o.seconds;
  if (o.size !== undefined) body.size = o.size;
  if (o.image !== undefined) body.frame_images = [{ image_url: imageUrl(o.image), frame_type: 'first_frame' }];

  const created = await api.json<VideoJob>('POST', '/v1/videos/generations', body);
  const wait = o.wait || o.output !== undefined;
  if (!o.json) out(created.id);
  if (!wait) {
    if (o.json) printJson(created);
    return EXIT.ok;
  }
  const job = await waitForJob(api, created, { pollMs: timing.pollMs });
  if (job.status === 'failed') {
    if (o.json) printJson(job);
    throw failedJobError(job);
  }
  const saved = o.output === undefined ? undefined : await downloadVideo(api, job.id, o.output, { maxBytes: o.maxBytes, timing });
  if (saved) note(`saved ${saved.path} (${saved.bytes} bytes)`);
  if (o.json) printJson(saved ? { ...job, download: saved } : job);
  return EXIT.ok;
}

/** The bound on a download: a larger announced size is refused, an unannounced body cut there. */
const maxBytesOption = () =>
  [
    '--max-bytes <n>',
    `largest download (default ${LARGEST_VIDEO_BYTES}, 512 MiB): a larger announced size is refused, an unannounced body cut there`,
    positiveInteger('--max-bytes'),
  ] as const;

function register(program: Command, run: Runner): void {
  const video = program.command('video').description('create, follow, download, list and delete video jobs through the HTTP API');

  clientOptions(
    video
      .command('create')
      .description('create a video job and print its id; --wait follows it, --output downloads it')
      .requiredOption('--model <model>', 'video model, e.g. sora-2')
      .requiredOption('--prompt <text>', 'what the video shows')
      .option('--seconds <n>', 'requested duration', positiveNumber('--seconds'))
      .option('--size <WxH>', 'frame size, e.g. 1280x720')
      .option('--image <file-or-url>', 'first frame: an http(s) URL or a local .png/.jpg/.webp file')
      .option('--param <key=value>', 'a vendor-native field (JSON values; dotted keys nest); repeatable', collect, [])
      .option('--wait', 'poll until the job settles, with a progress bar on a terminal')
      .option('--output <file>', 'download the finished video here (implies --wait)')
      .option(...maxBytesOption()),
  ).action(run(create));

  clientOptions(video.command('get <id>').description('show a video job')).action(
    run(async (id: string, o: ClientFlags) => {
      const job = await apiClient(o).json<VideoJob>('GET', videoPath(id));
      if (o.json) printJson(job);
      else out(describe(job));
    }),
  );

  clientOptions(
    video
      .command('list')
      .description("list the account's video jobs, newest first")
      .option('--limit <n>', 'at most this many', positiveNumber('--limit'))
      .option('--after <id>', 'continue after this id (pagination)')
      .option('--order <order>', 'asc or desc (default desc)'),
  ).action(
    run(async (o: ClientFlags & { limit?: number; after?: string; order?: string }) => {
      const q = new URLSearchParams();
      if (o.limit !== undefined) q.set('limit', String(o.limit));
      if (o.after) q.set('after', o.after);
      if (o.order) q.set('order', o.order);
      const page = await apiClient(o).json<{ data: VideoJob[]; has_more?: boolean }>('GET', `/v1/videos${q.size ? `?${q}` : ''}`);
      if (o.json) return printJson(page);
      for (const j of page.data) out([j.id, j.status, j.model, j.created_at].map((v) => printable(String(v ?? '-'))).join('\t'));
      if (page.has_more) note('more: pass --after with the last id');
    }),
  );

  clientOptions(
    video
      .command('download <id>')
      .description('download a finished video, resuming a partial download with Range')
      .option('--output <file>', 'where to write it', 'video.mp4')
      .option('--index <n>', 'which video, for jobs that made several', positiveNumber('--index'))
      .option(...maxBytesOption()),
  ).action(
    run(async (id: string, o: ClientFlags & { output: string; index?: number; maxBytes?: number }) => {
      const saved = await downloadVideo(apiClient(o), id, o.output, { index: o.index, maxBytes: o.maxBytes, timing: clientTiming() });
      if (o.json) printJson(saved);
      else out(saved.path);
    }),
  );

  clientOptions(video.command('delete <id>').description('delete a video job (cancels it while it runs)')).action(
    run(async (id: string, o: ClientFlags) => {
      const r = await apiClient(o).json('DELETE', videoPath(id));
      if (o.json) printJson(r);
      else out(`deleted ${id}`);
    }),
  );
}

export const videoCommand: CliCommand = { register };
