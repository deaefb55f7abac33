import { sniffVideo } from '../../../core/sniff.js';
import { randomBytes } from 'node:crypto';
import { bearer, SimServer, type SimReply, type SimRequest } from '../../../sim/framework.js';
import { samplePng } from '../../../sim/media.js';
import { keptFields, TaskBook, type SimTask } from '../../../sim/tasks.js';
import type { SimulatorOptions } from '../module.js';
import { readBody, simId, videoReply, type SimBody } from '../../../sim/openai-videos.js';

/**
 * Azure OpenAI's Sora preview jobs API on loopback, under /openai/v1/video/generations with
 * ?api-version= on every call and the `api-key` header (a Bearer token equal to the key stands in
 * for Entra ID). Statuses move queued -> preprocessing -> running -> processing -> succeeded.
 * "[moderation-create]" is refused at submit with Azure's content-filter answer; TaskBook markers fail
 * the job: "[moderation]" output_moderation, "[fail]" internal_error, and two reasons that only this
 * simulator uses so the adapter's fallback mapping is exercised: "[bad-image]" invalid_input_media,
 * "[bad-combo]" unsupported_dimensions. "[no-video]" ends `succeeded` with an empty `generations`.
 */
const ROOT = '/openai/v1/video/generations';
const SIZES = ['360x360', '640x360', '480x480', '854x480', '720x720', '1280x720', '1080x1080', '1920x1080'];
const REASONS: Record<string, string> = {
  moderation: 'output_moderation',
  fail: 'internal_error',
  'bad-image': 'invalid_input_media',
  'bad-combo': 'unsupported_dimensions',
};

function azErr(status: number, code: string, message: string, extra: Record<string, unknown> = {}): SimReply {
  return { status, json: { error: { code, message, ...extra } } };
}

function int(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^\d+$/.test(v)) return Number(v);
  return undefined;
}

function status(book: TaskBook, t: SimTask): string {
  if (t.cancelled) return 'cancelled';
  if (book.phase(t) === 'done') return t.outcome === 'success' || t.outcome === 'no-video' ? 'succeeded' : 'failed';
  const p = book.progress(t);
  return p < 20 ? 'queued' : p < 40 ? 'preprocessing' : p < 70 ? 'running' : 'processing';
}

function generation(t: SimTask, id: string): Record<string, unknown> {
  const d = t.data;
  return {
    object: 'video.generation',
    id,
    job_id: t.id,
    created_at: Math.floor(t.readyAt / 1000),
    width: d.width,
    height: d.height,
    n_seconds: t.seconds,
    prompt: d.prompt,
    sim_seed: d.genIds.indexOf(id) + 1,
  };
}

/** The generation ids a finished job lists (none for a "[no-video]" job). */
function generationIds(t: SimTask): string[] {
  return t.outcome === 'no-video' ? [] : (t.data.genIds as string[]);
}

function job(book: TaskBook, t: SimTask): Record<string, unknown> {
  const s = status(book, t);
  const d = t.data;
  const finished = s === 'succeeded' || s === 'failed' || s === 'cancelled';
  return {
    object: 'video.generation.job',
    id: t.id,
    status: s,
    created_at: Math.floor(t.createdAt / 1000),
    finished_at: finished ? Math.floor((t.cancelled ? d.cancelledAt : t.readyAt) / 1000) : null,
    expires_at: s === 'succeeded' ? Math.floor(t.readyAt / 1000) + 86_400 : null,
    generations: s === 'succeeded' ? generationIds(t).map((g) => generation(t, g)) : [],
    prompt: d.prompt,
    model: d.deployment,
    n_variants: d.nVariants,
    n_seconds: t.seconds,
    height: d.height,
    width: d.width,
    ...(d.inpaintItems ? { inpaint_items: d.inpaintItems } : {}),
    failure_reason: s === 'failed' ? REASONS[t.outcome] : null,
    sim_trace_id: d.traceId,
  };
}

/** Checks inpaint items against the uploaded files; returns the items or an error reply. */
function inpaint(body: SimBody): unknown[] | SimReply | undefined {
  let items: unknown = body.fields.inpaint_items;
  if (items === undefined) return undefined;
  if (body.multipart) {
    try {
      items = JSON.parse(String(items));
    } catch {
      return azErr(400, 'BadRequest', 'inpaint_items must be a JSON array.', { param: 'inpaint_items' });
    }
  }
  if (!Array.isArray(items)) return azErr(400, 'BadRequest', 'inpaint_items must be a JSON array.', { param: 'inpaint_items' });
  for (const it of items as Record<string, unknown>[]) {
    if (!it || typeof it !== 'object' || (it.type !== 'image' && it.type !== 'video') || int(it.frame_index ?? 0) === undefined) {
      return azErr(400, 'BadRequest', 'Each inpaint item needs type image|video and an integer frame_index.', { param: 'inpaint_items' });
    }
    const file = body.files.find((f) => f.field === 'files' && f.filename === it.file_name);
    if (!file) {
      return azErr(400, 'BadRequest', `No uploaded file matches inpaint item file_name '${String(it.file_name)}'.`, { param: 'inpaint_items' });
    }
    // A video item's file must be a video (MP4, MOV, WebM), judged from its bytes.
    if (it.type === 'video' && !sniffVideo(file.data)) {
      return azErr(400, 'BadRequest', `The file '${String(it.file_name)}' of a video inpaint item is not a supported video.`, { param: 'inpaint_items' });
    }
  }
  return items;
}

/** What the job echoes of an inpaint item: its own fields, not whatever else the client put in it. */
function keptItem(item: unknown): Record<string, unknown> {
  const it = item as Record<string, unknown>;
  const crop = it.crop_bounds;
  const bounds = crop && typeof crop === 'object' ? keptFields(crop as Record<string, unknown>, ['left_fraction', 'top_fraction', 'right_fraction', 'bottom_fraction']) : undefined;
  return { ...keptFields(it, ['type', 'frame_index', 'file_name']), ...(bounds ? { crop_bounds: bounds } : {}) };
}

async function create(req: SimRequest, sim: SimServer, book: TaskBook): Promise<SimReply> {
  const body = await readBody(req);
  if (!body) return azErr(400, 'BadRequest', 'The request body could not be parsed.');
  const f = body.fields;
  const deployments: string[] = sim.settings.deployments;
  if (typeof f.model !== 'string' || !deployments.includes(f.model)) {
    return azErr(404, 'DeploymentNotFound', 'The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again.');
  }
  if (typeof f.prompt !== 'string' || f.prompt === '') return azErr(400, 'BadRequest', "'prompt' is required.", { param: 'prompt' });
  const width = int(f.width);
  const height = int(f.height);
  if (width === undefined) return azErr(400, 'BadRequest', "'width' is required and must be an integer.", { param: 'width' });
  if (height === undefined) return azErr(400, 'BadRequest', "'height' is required and must be an integer.", { param: 'height' });
  const portrait = `${height}x${width}`;
  if (!SIZES.includes(`${width}x${height}`) && !SIZES.includes(portrait)) {
    return azErr(400, 'BadRequest', `Unsupported resolution ${width}x${height}. Supported: ${SIZES.join(', ')}.`, { param: 'width' });
  }
  const nSeconds = f.n_seconds === undefined ? 5 : int(f.n_seconds);
  if (nSeconds === undefined || nSeconds < 1 || nSeconds > 20) return azErr(400, 'BadRequest', "'n_seconds' must be between 1 and 20.", { param: 'n_seconds' });
  const nVariants = f.n_variants === undefined ? 1 : int(f.n_variants);
  if (nVariants === undefined || nVariants < 1 || nVariants > 5) return azErr(400, 'BadRequest', "'n_variants' must be between 1 and 5.", { param: 'n_variants' });
  const short = Math.min(width, height);
  if ((short >= 1080 && (nSeconds > 10 || nVariants > 1)) || (short >= 720 && nVariants > 2)) {
    return azErr(400, 'BadRequest', `The combination of ${width}x${height}, ${nSeconds}s and ${nVariants} variants is not supported.`);
  }
  const items = inpaint(body);
  if (items && !Array.isArray(items)) return items;
  if (f.prompt.includes('[moderation-create]')) {
    return azErr(400, 'content_filter', "The response was filtered due to the prompt triggering Azure OpenAI's content management policy.", {
      param: 'prompt',
      type: null,
      innererror: { code: 'ResponsibleAIPolicyViolation', content_filter_result: { violence: { filtered: true, severity: 'high' } } },
    });
  }
  const genIds = Array.from({ length: nVariants }, () => `gen_01${simId(24)}`);
  const task = book.create({
    prompt: f.prompt,
    seconds: nSeconds,
    durationMs: sim.settings.taskMs,
    id: `task_01${simId(24)}`,
    data: { deployment: f.model, prompt: f.prompt, width, height, nVariants, genIds, inpaintItems: items?.map(keptItem), traceId: randomBytes(8).toString('hex') },
  });
  for (const g of genIds) (sim.settings.generations as Map<string, string>).set(g, task.id);
  return { status: 200, json: job(book, task) };
}

function generationRoute(req: SimRequest, sim: SimServer, book: TaskBook, genId: string, tail: string | undefined): SimReply {
  const taskId = (sim.settings.generations as Map<string, string>).get(genId);
  const t = taskId ? book.get(taskId) : undefined;
  if (!t || (sim.settings.deleted as Set<string>).has(t.id) || status(book, t) !== 'succeeded' || !generationIds(t).includes(genId)) {
    return azErr(404, 'NotFound', `Generation ${genId} was not found.`);
  }
  if (tail === undefined) return { status: 200, json: generation(t, genId) };
  if (tail === 'video') return videoReply(req, sim);
  if (tail === 'thumbnail') return { status: 200, headers: { 'content-type': 'image/png' }, body: samplePng() };
  return azErr(404, 'NotFound', 'Resource not found');
}

async function handle(req: SimRequest, sim: SimServer, book: TaskBook): Promise<SimReply> {
  const key = req.headers['api-key'] ?? bearer(req);
  if (key !== sim.settings.apiKey) {
    return azErr(401, '401', 'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.');
  }
  const version = req.query.get('api-version');
  if (!version) return azErr(400, 'MissingApiVersionParameter', 'The api-version query parameter (?api-version=) is required for all requests.');
  if (version !== 'preview' && !/^\d{4}-\d{2}-\d{2}-preview$/.test(version)) {
    return azErr(400, 'BadRequest', `API version ${version} is not supported for video generation.`);
  }
  if (!req.path.startsWith(`${ROOT}/`)) return azErr(404, '404', 'Resource not found');
  const rest = req.path.slice(ROOT.length + 1);
  if (rest === 'jobs' && req.method === 'POST') return create(req, sim, book);
  const jm = /^jobs\/([^/]+)$/.exec(rest);
  if (jm) {
    const id = decodeURIComponent(jm[1]!);
    const t = book.get(id);
    const deleted = sim.settings.deleted as Set<string>;
    if (!t || deleted.has(id)) return azErr(404, 'NotFound', `Job ${id} was not found.`);
    if (req.method === 'GET') return { status: 200, json: job(book, t) };
    if (req.method === 'DELETE') {
      // A job still running is cancelled; a finished one is removed with its generations.
      if (book.phase(t) !== 'done' && !t.cancelled) {
        t.cancelled = true;
        t.data.cancelledAt = Date.now();
      } else deleted.add(id);
      return { status: 204 };
    }
  }
  const gm = /^([^/]+)(?:\/content\/([^/]+))?$/.exec(rest);
  if (gm && req.method === 'GET' && gm[1] !== 'jobs') return generationRoute(req, sim, book, decodeURIComponent(gm[1]!), gm[2]);
  return azErr(404, '404', 'Resource not found');
}

export async function startAzureSoraSimulator(opts: SimulatorOptions = {}): Promise<SimServer> {
  const generations = new Map<string, string>();
  const deleted = new Set<string>();
  // A job forgotten takes its generations and its deletion mark with it.
  const book = new TaskBook(opts.tasks, (t) => {
    for (const g of t.data.genIds as string[]) generations.delete(g);
    deleted.delete(t.id);
  });
  const sim = await SimServer.start('azure-sora', (req, sim) => handle(req, sim, book), {
    port: opts.port,
    settings: { taskMs: opts.taskMs ?? 3000, apiKey: opts.apiKey ?? 'sim-key', deployments: ['sora'], generations, deleted },
  });
  sim.tasks = book;
  return sim;
}
