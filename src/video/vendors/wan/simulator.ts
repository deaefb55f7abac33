import { referenceVideoProblem } from '../../../sim/media.js';
import { randomUUID } from 'node:crypto';
import { bearer, SimServer, type SimReply, type SimRequest } from '../../../sim/framework.js';
import { TaskBook, type SimTask } from '../../../sim/tasks.js';
import type { SimulatorOptions } from '../module.js';
import { IMAGE2VIDEO_PATH, TASKS_PATH, VIDEO_GENERATION_PATH, wanModelInfo } from './models.js';
import { ossStore, serveSignedVideo, signedUrl } from '../../../sim/signed-storage.js';

/**
 * A DashScope simulator for Wan video synthesis: both create endpoints, the mandatory async header,
 * Bearer (or X-DashScope-ApiKey) auth, flat `{request_id, code, message}` errors, the task enum
 * PENDING -> RUNNING -> SUCCEEDED/FAILED (CANCELED, UNKNOWN), usage in both historical shapes, and
 * results on pre-signed OSS-like URLs. Prompt markers pick outcomes (see sim/tasks.ts); the extra
 * marker "[moderation-input]" is refused at create, as DashScope's input inspection does.
 */
const DEFAULT_KEY = 'sim-key';
const VIDEO_PREFIX = '/sim-oss/dashscope-result/';

function fail(status: number, code: string, message: string): SimReply {
  return { status, json: { request_id: randomUUID(), code, message } };
}

/** DashScope timestamps are Beijing-local strings, not ISO or epoch. */
function beijingTime(ms: number): string {
  return new Date(ms + 8 * 3600_000).toISOString().replace('T', ' ').replace('Z', '');
}

function authorised(req: SimRequest, sim: SimServer): boolean {
  const key = bearer(req) ?? req.headers['x-dashscope-apikey'];
  return key === (sim.settings.apiKey ?? DEFAULT_KEY);
}

function tierOf(params: Record<string, any>): number {
  if (typeof params.resolution === 'string') return Number.parseInt(params.resolution, 10);
  if (typeof params.size === 'string') {
    const [w, h] = params.size.split('*').map(Number);
    return Math.min(w!, h!);
  }
  return 720;
}

async function create(req: SimRequest, sim: SimServer, book: TaskBook, endpoint: 'video-generation' | 'image2video'): Promise<SimReply> {
  const body = req.json;
  if (req.headers['x-dashscope-async'] !== 'enable') {
    return fail(403, 'AccessDenied', 'current user api does not support synchronous calls');
  }
  if (!body || typeof body !== 'object') return fail(400, 'InvalidParameter', 'The request body is not valid JSON.');
  if (typeof body.model !== 'string' || !body.model) return fail(400, 'BadRequest.EmptyModel', 'Required parameter "model" missing from request.');
  if (!body.input || typeof body.input !== 'object') return fail(400, 'BadRequest.EmptyInput', 'Required parameter "input" missing from request.');
  const input = body.input as Record<string, any>;
  const params = (body.parameters ?? {}) as Record<string, any>;
  const info = wanModelInfo(body.model);
  const wanted = info.kind === 'kf2v' ? 'image2video' : 'video-generation';
  if (endpoint !== wanted) return fail(400, 'InvalidParameter', `Model ${body.model} is not supported on this url, please check url.`);
  if (params.size !== undefined && (typeof params.size !== 'string' || !/^\d+\*\d+$/.test(params.size))) {
    return fail(400, 'InvalidParameter', `The size ${JSON.stringify(params.size)} is invalid; use WIDTH*HEIGHT such as 1280*720.`);
  }
  if (params.size !== undefined && info.usesTier) return fail(400, 'InvalidParameter', `Model ${body.model} takes resolution, not size.`);
  if (params.resolution !== undefined && !/^(480|720|1080)P$/.test(String(params.resolution))) {
    return fail(400, 'InvalidParameter', `The resolution ${JSON.stringify(params.resolution)} is invalid; use 480P, 720P or 1080P.`);
  }
  if (params.duration !== undefined && !Number.isInteger(params.duration)) {
    return fail(400, 'InvalidParameter', 'The duration must be an integer number of seconds.');
  }
  if (info.kind === 'kf2v' && !input.first_frame_url) return fail(400, 'InvalidParameter', 'Field required: input.first_frame_url');
  if (info.kind === 'i2v' && !info.mediaProtocol && !input.img_url && !input.template) {
    return fail(400, 'InvalidParameter', 'Field required: input.img_url');
  }
  if (input.media !== undefined && !Array.isArray(input.media)) return fail(400, 'InvalidParameter', 'input.media must be an array.');
  if (typeof input.prompt === 'string' && input.prompt.includes('[moderation-input]')) {
    return fail(400, 'DataInspectionFailed', 'Input data may contain inappropriate content.');
  }
  const media = (input.media ?? []) as Record<string, any>[];
  const referenceVideos = media.filter((m) => m?.type === 'reference_video').length;
  if (referenceVideos > 0 && info.kind !== 'r2v') return fail(400, 'InvalidParameter', `Model ${body.model} does not take reference videos.`);
  // DashScope downloads every reference video at submit and refuses what it cannot read.
  for (const m of media.filter((x) => x?.type === 'reference_video')) {
    const problem = sim.settings.fetchReferenceMedia ? await referenceVideoProblem(m.url) : typeof m.url === 'string' ? undefined : 'url is required';
    if (problem) return fail(400, 'InvalidParameter.DataInspection', `The reference video is invalid: ${problem}.`);
  }
  const task = book.create({
    prompt: input.prompt,
    // settings.reportSeconds: the model chose another length than asked (billing must follow it).
    seconds: typeof sim.settings.reportSeconds === 'number' ? sim.settings.reportSeconds : typeof params.duration === 'number' ? params.duration : 5,
    durationMs: sim.settings.taskMs ?? 3000,
    data: { model: body.model, tier: tierOf(params), size: params.size, ratio: params.ratio, referenceVideos, prompt: input.prompt },
  });
  return { json: { request_id: randomUUID(), output: { task_id: task.id, task_status: 'PENDING' } } };
}

/** wan2.1/2.2 report `video_duration`; later models `duration` (which includes input video seconds for r2v). */
function usageOf(task: SimTask): Record<string, unknown> {
  const model: string = task.data.model;
  if (/^wanx?2\.[12]/.test(model)) {
    return { video_duration: task.seconds, video_ratio: task.data.size ?? 'standard', video_count: 1, SR: task.data.tier };
  }
  if (task.data.referenceVideos > 0) {
    const inputSeconds = 3 * task.data.referenceVideos;
    return {
      duration: task.seconds + inputSeconds,
      input_video_duration: inputSeconds,
      output_video_duration: task.seconds,
      video_count: 1,
      SR: task.data.tier,
    };
  }
  return { duration: task.seconds, video_count: 1, SR: task.data.tier };
}

const FAILURES = {
  moderation: ['DataInspectionFailed', 'Output data may contain inappropriate content.'],
  fail: ['InternalError.Algo', 'An internal error occurred during the algorithm execution.'],
  'bad-image': ['InvalidParameter.DataInspection', 'Download the media resource timed out during the data inspection process.'],
  'bad-combo': ['InvalidParameter', 'The combination of duration and resolution is not supported by this model.'],
} as const;

function poll(sim: SimServer, book: TaskBook, id: string): SimReply {
  const request_id = randomUUID();
  const task = book.get(id);
  if (!task) return { json: { request_id, output: { task_id: id, task_status: 'UNKNOWN' } } };
  const phase = book.phase(task);
  const output: Record<string, unknown> = { task_id: task.id, submit_time: beijingTime(task.createdAt) };
  const extra = { sim_trace_id: `trace-${task.id.slice(0, 8)}` };
  if (task.cancelled) return { json: { request_id, output: { ...output, task_status: 'CANCELED', end_time: beijingTime(Date.now()) }, ...extra } };
  if (phase === 'queued') return { json: { request_id, output: { ...output, task_status: 'PENDING' }, ...extra } };
  output.scheduled_time = beijingTime(task.createdAt + 50);
  if (phase === 'running') return { json: { request_id, output: { ...output, task_status: 'RUNNING' }, ...extra } };
  output.end_time = beijingTime(task.readyAt);
  if (task.outcome === 'no-video') {
    return { json: { request_id, output: { ...output, task_status: 'SUCCEEDED', orig_prompt: task.data.prompt ?? '' }, usage: usageOf(task), ...extra } };
  }
  if (task.outcome !== 'success') {
    const [code, message] = FAILURES[task.outcome];
    return { json: { request_id, output: { ...output, task_status: 'FAILED', code, message }, ...extra } };
  }
  const video_url = signedUrl(sim, `${VIDEO_PREFIX}${task.id}.mp4`, ossStore);
  return {
    json: {
      request_id,
      output: { ...output, task_status: 'SUCCEEDED', video_url, orig_prompt: task.data.prompt ?? '', actual_prompt: `${task.data.prompt ?? ''} (extended)` },
      usage: usageOf(task),
      ...extra,
    },
  };
}

function cancel(book: TaskBook, id: string): SimReply {
  const task = book.get(id);
  if (!task || task.cancelled || book.phase(task) !== 'queued') {
    return fail(400, 'UnsupportedOperation', 'Failed to cancel the task, please confirm if the task is in PENDING status.');
  }
  task.cancelled = true;
  return { json: { request_id: randomUUID() } };
}

export async function startWanSimulator(opts: SimulatorOptions = {}): Promise<SimServer> {
  const book = new TaskBook(opts.tasks);
  const handler = (req: SimRequest, sim: SimServer): SimReply | Promise<SimReply> => {
    if (req.method === 'GET' && req.path.startsWith(VIDEO_PREFIX)) return serveSignedVideo(req, sim, ossStore);
    if (!authorised(req, sim)) return fail(401, 'InvalidApiKey', 'Invalid API-key provided.');
    if (req.method === 'POST' && req.path === VIDEO_GENERATION_PATH) return create(req, sim, book, 'video-generation');
    if (req.method === 'POST' && req.path === IMAGE2VIDEO_PATH) return create(req, sim, book, 'image2video');
    const m = new RegExp(`^${TASKS_PATH}/([^/]+)(/cancel)?$`).exec(req.path);
    if (m && req.method === 'GET' && !m[2]) return poll(sim, book, decodeURIComponent(m[1]!));
    if (m && req.method === 'POST' && m[2]) return cancel(book, decodeURIComponent(m[1]!));
    return fail(404, 'InvalidParameter', 'url error, please check url!');
  };
  const sim = await SimServer.start('wan', handler, {
    port: opts.port,
    settings: { taskMs: opts.taskMs ?? 3000, apiKey: opts.apiKey ?? DEFAULT_KEY },
  });
  sim.tasks = book;
  return sim;
}
