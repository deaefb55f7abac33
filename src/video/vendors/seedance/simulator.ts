import { referenceVideoProblem } from '../../../sim/media.js';
import { randomBytes } from 'node:crypto';
import { bearer, SimServer, type SimReply, type SimRequest } from '../../../sim/framework.js';
import { keptFields, TaskBook, type SimTask } from '../../../sim/tasks.js';
import type { SimulatorOptions } from '../module.js';
import { callBackWhenReady } from '../../../sim/callback.js';
import { serveSignedVideo, signedUrl, URL_LIFETIME_S, type SignedStore } from '../../../sim/signed-storage.js';
import { DEFAULT_FPS, seedanceCaps, TASKS_PATH } from './models.js';

/**
 * An Ark simulator for Seedance content-generation tasks: Bearer auth, the `{error:{code,message,param,
 * type}}` envelope, the task object with content.video_url, duration or frames + framespersecond and
 * usage tokens, statuses queued -> running -> succeeded/failed (cancelled via DELETE, expired), and
 * results on pre-signed TOS-like URLs. Prompt markers pick outcomes (see sim/tasks.ts); in addition
 * "[moderation-input]" is refused at create and "[expire]" ends the task as expired.
 */
const DEFAULT_KEY = 'sim-key';
const VIDEO_PREFIX = '/sim-tos/ark-content-generation/';
const RATIOS = new Set(['16:9', '4:3', '1:1', '3:4', '9:16', '21:9', 'adaptive']);

function requestId(): string {
  return `0217${Date.now()}${randomBytes(8).toString('hex')}`;
}

function arkError(status: number, code: string, message: string, type: string, param = ''): SimReply {
  return { status, json: { error: { code, message: `${message} Request id: ${requestId()}`, param, type } } };
}

const bad = (code: string, message: string, param = '') => arkError(400, code, message, 'BadRequest', param);

function tosDate(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '');
}

const tosStore: SignedStore = {
  signatureParam: 'X-Tos-Signature',
  sign: (nowMs) => ({
    'X-Tos-Algorithm': 'TOS4-HMAC-SHA256',
    'X-Tos-Credential': `AKLTsimulator/${tosDate(nowMs).slice(0, 8)}/cn-beijing/tos/request`,
    'X-Tos-Date': tosDate(nowMs),
    'X-Tos-Expires': String(URL_LIFETIME_S),
    'X-Tos-SignedHeaders': 'host',
    'X-Tos-Signature': randomBytes(32).toString('hex'),
  }),
  expiresAt: (q) => {
    const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(q.get('X-Tos-Date') ?? '');
    if (!m) return NaN;
    return Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) + Number(q.get('X-Tos-Expires')) * 1000;
  },
  error: (status, code, message) => ({ status, json: { Code: code, Message: message, RequestId: requestId(), HostId: 'tos-cn-beijing.volces.com' } }),
};

/** Ark bills `width x height x fps x seconds / 1024` tokens; dimensions follow the tier's short side. */
function tokens(resolution: string, ratio: string, seconds: number): number {
  const tier = Number.parseInt(resolution, 10) || 720;
  const [a, b] = /^\d+:\d+$/.test(ratio) ? ratio.split(':').map(Number) : [16, 9];
  const [w, h] = a! >= b! ? [Math.round((tier * a!) / b!), tier] : [tier, Math.round((tier * b!) / a!)];
  return Math.floor((w * h * DEFAULT_FPS * seconds) / 1024);
}

function validate(body: any): SimReply | undefined {
  if (!body || typeof body !== 'object') return bad('InvalidParameter', 'The request body is not valid JSON.');
  if (typeof body.model !== 'string' || !body.model) return bad('MissingParameter', 'The parameter `model` is required.', 'model');
  if (!Array.isArray(body.content) || body.content.length === 0) return bad('MissingParameter', 'The parameter `content` is required.', 'content');
  const caps = seedanceCaps(body.model);
  for (const item of body.content) {
    const type = item?.type;
    if (!['text', 'image_url', 'video_url', 'audio_url', 'draft_task'].includes(type)) return bad('InvalidParameter', `Unknown content type ${JSON.stringify(type)}.`, 'content');
    if (type === 'image_url' && item.role && !['first_frame', 'last_frame', 'reference_image'].includes(item.role)) {
      return bad('InvalidParameter', `The image role ${item.role} is invalid.`, 'content');
    }
    if (type === 'image_url' && item.role === 'reference_image' && !caps.references.has('image')) {
      return bad('InvalidParameter', `The model ${body.model} does not support reference images.`, 'content');
    }
    if ((type === 'video_url' || type === 'audio_url') && !caps.references.has(type === 'video_url' ? 'video' : 'audio')) {
      return bad('InvalidParameter', `The model ${body.model} does not support ${type} content.`, 'content');
    }
  }
  if (body.duration !== undefined && body.frames !== undefined) return bad('InvalidParameter', 'duration and frames cannot be set at the same time.', 'duration');
  if (body.duration === -1 && !caps.autoDuration) return bad('InvalidParameter', `duration -1 is not supported by the model ${body.model}.`, 'duration');
  if (body.duration !== undefined && body.duration !== -1 && !(Number.isInteger(body.duration) && body.duration >= 2 && body.duration <= caps.maxSeconds)) {
    return bad('InvalidParameter', `The duration ${JSON.stringify(body.duration)} is out of range.`, 'duration');
  }
  if (body.frames !== undefined && !(Number.isInteger(body.frames) && body.frames >= 29 && body.frames <= 289 && (body.frames - 25) % 4 === 0)) {
    return bad('InvalidParameter', 'frames must be 25+4n within [29, 289].', 'frames');
  }
  if (body.resolution !== undefined && !['480p', '720p', '1080p'].includes(body.resolution)) {
    return bad('InvalidParameter', `The resolution ${JSON.stringify(body.resolution)} is invalid.`, 'resolution');
  }
  if (body.ratio !== undefined && !RATIOS.has(body.ratio)) return bad('InvalidParameter', `The ratio ${JSON.stringify(body.ratio)} is invalid.`, 'ratio');
  if (body.draft === true && !caps.draft) return bad('InvalidParameter', `draft is not supported by the model ${body.model}.`, 'draft');
  const text = body.content.find((c: any) => c?.type === 'text')?.text;
  if (typeof text === 'string' && text.includes('[moderation-input]')) {
    return bad('InputTextSensitiveContentDetected', 'The request failed because the input text may contain sensitive information.');
  }
  return undefined;
}

async function create(req: SimRequest, sim: SimServer, book: TaskBook): Promise<SimReply> {
  const invalid = validate(req.json);
  if (invalid) return invalid;
  const body = req.json;
  // Ark downloads reference videos at submit; one it cannot read fails the request.
  if (sim.settings.fetchReferenceMedia) {
    for (const c of body.content.filter((x: any) => x?.type === 'video_url')) {
      const problem = await referenceVideoProblem(c.video_url?.url);
      if (problem) return bad('InvalidParameter', `The video_url content is invalid: ${problem}.`, 'content');
    }
  }
  const prompt: string = body.content.find((c: any) => c?.type === 'text')?.text ?? '';
  // With -1 the model chooses the length; the simulator "chooses" 8 s.
  const seconds = body.frames !== undefined ? body.frames / DEFAULT_FPS : body.duration === -1 ? 8 : (body.duration ?? 5);
  const hasImage = body.content.some((c: any) => c?.type === 'image_url');
  const id = `cgt-${tosDate(Date.now()).replace('T', '').replace('Z', '')}-${randomBytes(3).toString('hex').slice(0, 5)}`;
  // The task keeps the fields its answers echo, not the body: a body padded with megabytes would
  // otherwise stay in memory for as long as the task does.
  const request = { ...keptFields(body, ANSWERED_FIELDS), model: body.model as string };
  const task = book.create({ id, prompt, seconds, durationMs: sim.settings.taskMs ?? 3000, data: { request, hasImage, expire: prompt.includes('[expire]') } });
  // Ark POSTs the task object, as the query answers it, to callback_url when the task finishes.
  if (typeof body.callback_url === 'string') callBackWhenReady(body.callback_url, task.readyAt, () => taskObject(sim, book, task));
  return { json: { id } };
}

const FAILURES = {
  moderation: ['OutputVideoSensitiveContentDetected', 'The request failed because the output video may contain sensitive information.'],
  fail: ['InternalServiceError', 'The service encountered an unexpected internal error.'],
  'bad-image': ['InvalidImageURL', 'The image could not be downloaded from the given URL.'],
  'bad-combo': ['InvalidParameter', 'The duration is not supported at the requested resolution for this model.'],
} as const;

/** The request fields a task object echoes or answers from (`model` is kept apart: validated, never cut). */
const ANSWERED_FIELDS = ['draft', 'resolution', 'ratio', 'frames', 'seed', 'service_tier', 'execution_expires_after', 'generate_audio', 'return_last_frame'];

function taskObject(sim: SimServer, book: TaskBook, task: SimTask): Record<string, unknown> {
  const body = task.data.request;
  const caps = seedanceCaps(body.model);
  const now = Date.now();
  const phase = book.phase(task, now);
  const resolution: string = body.draft ? '480p' : (body.resolution ?? '720p');
  const ratio: string = body.ratio ?? (task.data.hasImage ? 'adaptive' : '16:9');
  const out: Record<string, unknown> = {
    id: task.id,
    model: body.model,
    status: 'queued',
    error: null,
    created_at: Math.floor(task.createdAt / 1000),
    updated_at: Math.floor(Math.min(now, task.readyAt) / 1000),
    seed: typeof body.seed === 'number' && body.seed >= 0 ? body.seed : 78674,
    resolution,
    ratio: ratio === 'adaptive' ? '16:9' : ratio,
    ...(body.frames !== undefined ? { frames: body.frames } : { duration: task.seconds }),
    framespersecond: DEFAULT_FPS,
    service_tier: body.service_tier ?? 'default',
    execution_expires_after: body.execution_expires_after ?? 172800,
    sim_trace_id: `trace-${task.id.slice(-5)}`,
  };
  if (caps.family === '1.5-pro' || caps.family === '2.0') out.generate_audio = body.generate_audio ?? true;
  if (caps.family === '1.5-pro') out.draft = body.draft ?? false;
  if (task.cancelled) return { ...out, status: 'cancelled' };
  if (phase !== 'done') return { ...out, status: phase };
  if (task.data.expire) return { ...out, status: 'expired' };
  const t = tokens(resolution, String(out.ratio), task.seconds);
  // Succeeded, billed in tokens, but the content holds no video_url.
  if (task.outcome === 'no-video') return { ...out, status: 'succeeded', content: {}, usage: { completion_tokens: t, total_tokens: t } };
  if (task.outcome !== 'success') {
    const [code, message] = FAILURES[task.outcome];
    return { ...out, status: 'failed', error: { code, message: `${message} Request id: ${requestId()}` } };
  }
  const video_url = signedUrl(sim, `${VIDEO_PREFIX}${task.id}.mp4`, tosStore);
  const content: Record<string, string> = { video_url };
  if (body.return_last_frame) content.last_frame_url = signedUrl(sim, `${VIDEO_PREFIX}${task.id}-last.png`, tosStore);
  return { ...out, status: 'succeeded', content, usage: { completion_tokens: t, total_tokens: t } };
}

/** DELETE: a queued task becomes cancelled; a finished one is deleted; running/cancelled cannot be. */
function remove(book: TaskBook, deleted: Set<string>, task: SimTask): SimReply {
  const phase = book.phase(task);
  if (task.cancelled || phase === 'running') {
    return bad('InvalidParameter', `The task ${task.id} cannot be cancelled or deleted in its current status.`, 'id');
  }
  if (phase === 'queued') task.cancelled = true;
  else deleted.add(task.id);
  return { json: {} };
}

export async function startSeedanceSimulator(opts: SimulatorOptions = {}): Promise<SimServer> {
  const deleted = new Set<string>();
  const book = new TaskBook(opts.tasks, (task) => deleted.delete(task.id));
  const handler = (req: SimRequest, sim: SimServer): SimReply | Promise<SimReply> => {
    if (req.method === 'GET' && req.path.startsWith(VIDEO_PREFIX)) return serveSignedVideo(req, sim, tosStore);
    if (bearer(req) !== (sim.settings.apiKey ?? DEFAULT_KEY)) {
      return arkError(401, 'AuthenticationError', 'The API key or AK/SK in the request is missing or invalid.', 'Unauthorized');
    }
    if (req.method === 'POST' && req.path === TASKS_PATH) return create(req, sim, book);
    const m = new RegExp(`^${TASKS_PATH}/([^/]+)$`).exec(req.path);
    if (m) {
      const task = book.get(decodeURIComponent(m[1]!));
      if (!task || deleted.has(task.id)) return arkError(404, 'ResourceNotFound', 'The specified task does not exist.', 'NotFound');
      if (req.method === 'GET') return { json: taskObject(sim, book, task) };
      if (req.method === 'DELETE') return remove(book, deleted, task);
    }
    return arkError(404, 'NotFound', `The requested path ${req.path} does not exist.`, 'NotFound');
  };
  const sim = await SimServer.start('seedance', handler, {
    port: opts.port,
    settings: { taskMs: opts.taskMs ?? 3000, apiKey: opts.apiKey ?? DEFAULT_KEY },
  });
  sim.tasks = book;
  return sim;
}
