import { randomBytes } from 'node:crypto';
import { bearer, SimServer, type SimReply, type SimRequest } from '../../../sim/framework.js';
import { samplePng } from '../../../sim/media.js';
import { TaskBook, type SimTask } from '../../../sim/tasks.js';
import type { SimulatorOptions } from '../module.js';
import { readBody, videoReply } from '../../../sim/openai-videos.js';
import { oaiError, videoObject } from './simulator-objects.js';
import { characters, derive, type SimCharacter } from './simulator-derive.js';

/**
 * OpenAI's video API on loopback: POST /v1/videos (JSON or multipart, as the official SDK sends it),
 * GET /v1/videos/{id}, GET /v1/videos/{id}/content?variant=..., remix, edits, extensions and
 * characters (simulator-derive.ts), Bearer auth and the OpenAI error
 * envelope. Prompt markers: "[moderation-create]" is refused at submit; the TaskBook markers
 * ("[moderation]", "[fail]", "[bad-image]", "[bad-combo]") fail the job while it runs. "[no-video]" has
 * no Sora form (a video object never carries the video; it is fetched from /content): such a job completes.
 */
export const SIM_MODELS = ['sora-2', 'sora-2-pro', 'sora-2-2025-10-06', 'sora-2-pro-2025-10-06', 'sora-2-2025-12-08'];
const SECONDS = ['4', '8', '12'];
const SIZES = ['720x1280', '1280x720', '1024x1792', '1792x1024', '1920x1080', '1080x1920'];

/** Shown the way OpenAI shows a wrong key: only its ends survive. */
function maskKey(key: string): string {
  return key.length <= 8 ? '*'.repeat(key.length) : `${key.slice(0, 3)}${'*'.repeat(key.length - 7)}${key.slice(-4)}`;
}

function enumList(values: string[]): string {
  const q = values.map((v) => `'${v}'`);
  return `${q.slice(0, -1).join(', ')}, and ${q[q.length - 1]}`;
}

async function create(req: SimRequest, sim: SimServer, book: TaskBook): Promise<SimReply> {
  const body = await readBody(req);
  if (!body) return oaiError(400, 'We could not parse the JSON body of your request.');
  const f = body.fields;
  if (typeof f.prompt !== 'string' || f.prompt === '') return oaiError(400, "Missing required parameter: 'prompt'.", 'prompt', 'missing_required_parameter');
  const model = f.model ?? 'sora-2';
  const models: string[] = sim.settings.models ?? SIM_MODELS;
  if (!models.includes(model)) return oaiError(400, `Invalid value: '${String(model)}'. Supported values are: ${enumList(models)}.`, 'model', 'invalid_value');
  if (f.seconds !== undefined && typeof f.seconds !== 'string') {
    return oaiError(400, `Invalid type for 'seconds': expected one of ${enumList(SECONDS)}, but got ${typeof f.seconds} instead.`, 'seconds', 'invalid_type');
  }
  const seconds = f.seconds ?? '4';
  if (!SECONDS.includes(seconds)) return oaiError(400, `Invalid value: '${seconds}'. Supported values are: ${enumList(SECONDS)}.`, 'seconds', 'invalid_value');
  const size = f.size ?? '720x1280';
  if (!SIZES.includes(size)) return oaiError(400, `Invalid value: '${String(size)}'. Supported values are: ${enumList(SIZES)}.`, 'size', 'invalid_value');
  const ref = f.input_reference;
  const refFile = body.files.find((x) => x.field === 'input_reference');
  if (ref !== undefined && !refFile && !(ref && typeof ref === 'object' && (typeof ref.image_url === 'string' || typeof ref.file_id === 'string'))) {
    return oaiError(400, "Invalid 'input_reference': expected an object with 'image_url' or 'file_id'.", 'input_reference', 'invalid_value');
  }
  if (f.prompt.includes('[moderation-create]')) {
    return oaiError(400, 'Your request was blocked by our moderation system.', null, 'moderation_blocked');
  }
  const task = book.create({
    prompt: f.prompt,
    seconds: Number(seconds),
    durationMs: sim.settings.taskMs,
    id: `video_${randomBytes(24).toString('hex')}`,
    data: { model, size, prompt: f.prompt, traceId: randomBytes(8).toString('hex') },
  });
  return { status: 200, json: videoObject(book, task) };
}

/** POST /v1/videos/{id}/remix: only a completed video can be remixed; the new one keeps its duration and size. */
async function remix(req: SimRequest, sim: SimServer, book: TaskBook, source: SimTask): Promise<SimReply> {
  const body = await readBody(req);
  const prompt = body?.fields.prompt;
  if (typeof prompt !== 'string' || prompt === '') return oaiError(400, "Missing required parameter: 'prompt'.", 'prompt', 'missing_required_parameter');
  const v = videoObject(book, source);
  if (v.status !== 'completed') return oaiError(400, `Video '${source.id}' is not completed and cannot be remixed.`, null, 'invalid_request');
  const task = book.create({
    prompt,
    seconds: source.seconds,
    durationMs: sim.settings.taskMs,
    id: `video_${randomBytes(24).toString('hex')}`,
    data: { ...source.data, prompt, remixedFrom: source.id, traceId: randomBytes(8).toString('hex') },
  });
  return { status: 200, json: videoObject(book, task) };
}

function content(req: SimRequest, sim: SimServer, book: TaskBook, task: SimTask): SimReply {
  const v = videoObject(book, task);
  if (v.status !== 'completed') {
    return oaiError(400, `Video is not ready yet (status '${String(v.status)}'); check it with GET /v1/videos/${task.id}.`, null, 'video_not_ready');
  }
  const variant = req.query.get('variant') ?? 'video';
  if (variant === 'video') return videoReply(req, sim);
  if (variant === 'thumbnail' || variant === 'spritesheet') return { status: 200, headers: { 'content-type': 'image/png' }, body: samplePng() };
  return oaiError(400, `Invalid value: '${variant}'. Supported values are: 'video', 'thumbnail', and 'spritesheet'.`, 'variant', 'invalid_value');
}

async function handle(req: SimRequest, sim: SimServer, book: TaskBook, chars: Map<string, SimCharacter>): Promise<SimReply> {
  const key = bearer(req);
  if (key === undefined) {
    return oaiError(401, "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).");
  }
  if (key !== sim.settings.apiKey) {
    return oaiError(401, `Incorrect API key provided: ${maskKey(key)}. You can find your API key at https://platform.openai.com/account/api-keys.`, null, 'invalid_api_key');
  }
  if (req.method === 'POST' && req.path === '/v1/videos') return create(req, sim, book);
  if (req.method === 'POST' && req.path === '/v1/videos/edits') return derive(req, sim, book, 'edit');
  if (req.method === 'POST' && req.path === '/v1/videos/extensions') return derive(req, sim, book, 'extend');
  const character = await characters(req, chars);
  if (character) return character;
  const m = /^\/v1\/videos\/([^/]+)(\/content|\/remix)?$/.exec(req.path);
  if (m && (req.method === 'GET' || (req.method === 'POST' && m[2] === '/remix'))) {
    const id = decodeURIComponent(m[1]!);
    const task = book.get(id);
    if (!task) return oaiError(404, `Video with id '${id}' not found.`, null, 'not_found');
    if (m[2] === '/remix') return remix(req, sim, book, task);
    return m[2] ? content(req, sim, book, task) : { status: 200, json: videoObject(book, task) };
  }
  return oaiError(404, `Invalid URL (${req.method} ${req.path})`);
}

export async function startSoraSimulator(opts: SimulatorOptions = {}): Promise<SimServer> {
  const book = new TaskBook(opts.tasks);
  const chars = new Map<string, SimCharacter>();
  const sim = await SimServer.start('sora', (req, sim) => handle(req, sim, book, chars), {
    port: opts.port,
    settings: { taskMs: opts.taskMs ?? 3000, apiKey: opts.apiKey ?? 'sim-key' },
  });
  sim.tasks = book;
  return sim;
}
