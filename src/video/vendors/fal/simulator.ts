import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import type { Json } from '../../../core/json.js';
import { SimServer, type SimReply, type SimRequest } from '../../../sim/framework.js';
import { sampleMp4, serveVideo } from '../../../sim/media.js';
import { keptFields, TaskBook, type SimTask } from '../../../sim/tasks.js';
import { callBackWhenReady } from '../../../sim/callback.js';
import type { SimulatorOptions } from '../module.js';
import { falSignedMessage } from './signature.js';
import { appPath, familyOf, isInFormat, parseSeconds, type Family } from './families.js';

/**
 * A loopback stand-in for fal's queue (queue.fal.run) and CDN (v3.fal.media), speaking the real
 * protocol: `Key` auth, submit on the full model path, status/result/cancel on `{owner}/{app}`
 * only, 202 while queued or running and 200 once COMPLETED, and failures that show up only when
 * the result is fetched.
 *
 * Settings (sim.settings): taskMs, apiKey, videoBytes (serve a synthetic body of that size),
 * queueOrigin / cdnOrigin (origins written into returned URLs; default: the simulator's own),
 * reportDuration (results carry video.duration, as some models do).
 *
 * A model that makes several videos is stood in for by `num_videos`: a request with `num_videos: N`
 * (N > 1) gets a `videos: [...]` result of N files (one fewer with `[one-short]` in the prompt, as
 * when the model drops one), the shape fal's multi-output models answer with.
 */
export async function startFalSim(opts: SimulatorOptions = {}): Promise<SimServer> {
  const book = new TaskBook(opts.tasks);
  const sim = await SimServer.start('fal', (req, sim) => route(req, sim, book), {
    port: opts.port,
    settings: { taskMs: opts.taskMs ?? 3000, apiKey: opts.apiKey ?? 'sim-key' },
  });
  signingKeys.set(sim, generateKeyPairSync('ed25519'));
  sim.tasks = book;
  return sim;
}

/** Each simulator signs its webhooks with a key of its own, published at JWKS_PATH like fal's. */
const signingKeys = new WeakMap<SimServer, { privateKey: KeyObject; publicKey: KeyObject }>();
export const JWKS_PATH = '/.well-known/jwks.json';
const SIM_USER_ID = 'sim-user';

/**
 * The X-Fal-Webhook-* headers fal sends with a webhook, signed with this simulator's key (tests
 * also use it to build callbacks: a stale `timestamp`, another `key`).
 */
export function signFalWebhook(
  sim: SimServer,
  requestId: string,
  body: Buffer,
  opts: { timestamp?: number; key?: KeyObject } = {},
): Record<string, string> {
  const timestamp = String(opts.timestamp ?? Math.floor(Date.now() / 1000));
  const key = opts.key ?? signingKeys.get(sim)!.privateKey;
  const signature = sign(null, falSignedMessage(requestId, SIM_USER_ID, timestamp, body), key).toString('hex');
  return {
    'x-fal-webhook-request-id': requestId,
    'x-fal-webhook-user-id': SIM_USER_ID,
    'x-fal-webhook-timestamp': timestamp,
    'x-fal-webhook-signature': signature,
  };
}

function jwks(sim: SimServer): SimReply {
  const jwk = signingKeys.get(sim)!.publicKey.export({ format: 'jwk' });
  return { status: 200, json: { keys: [{ kty: jwk.kty!, crv: jwk.crv!, x: jwk.x!, use: 'sig', alg: 'EdDSA' }] } };
}

/** `[namespace/]owner/app/requests/{id}[/status|/cancel]` */
const REQUEST_PATH = /^\/((?:(?:workflows|comfy)\/)?[^/]+\/[^/]+)\/requests\/([^/]+)(\/status|\/cancel)?$/;
const CDN_PATH = /^\/files\/sim\/([^/]+)\/output(?:-\d+)?\.mp4$/;

function route(req: SimRequest, sim: SimServer, book: TaskBook): SimReply {
  const cdn = CDN_PATH.exec(req.path);
  if (cdn && (req.method === 'GET' || req.method === 'HEAD')) return content(req, sim, book.get(decodeURIComponent(cdn[1]!)));

  if (req.path === JWKS_PATH && req.method === 'GET') return jwks(sim);

  const denied = checkKey(req, sim);
  if (denied) return denied;

  const m = REQUEST_PATH.exec(req.path);
  if (m) {
    const [, app, rawId, action] = m;
    const task = book.get(decodeURIComponent(rawId!));
    if (!task || task.data['app'] !== app) return { status: 404, json: { detail: 'Request not found' } };
    if (action === '/status' && req.method === 'GET') return status(req, sim, book, task);
    if (action === '/cancel' && req.method === 'PUT') return cancel(book, task);
    if (action === undefined && req.method === 'GET') return result(sim, book, task);
    return { status: 405, json: { detail: 'Method Not Allowed' } };
  }
  if (req.method === 'POST') return submit(req, sim, book);
  return { status: 404, json: { detail: 'Not Found' } };
}

function checkKey(req: SimRequest, sim: SimServer): SimReply | undefined {
  const h = req.headers['authorization'] ?? '';
  const m = /^Key\s+(.+)$/.exec(h);
  if (!m) return { status: 401, json: { detail: 'Unauthorized' } };
  if (m[1] !== sim.settings['apiKey']) return { status: 401, json: { detail: 'No user found for Key ID and Secret' } };
  return undefined;
}

function urls(sim: SimServer, task: SimTask): Record<string, string> {
  const base = `${sim.settings['queueOrigin'] ?? sim.url}/${task.data['app']}/requests/${task.id}`;
  return { response_url: base, status_url: `${base}/status`, cancel_url: `${base}/cancel` };
}

function submit(req: SimRequest, sim: SimServer, book: TaskBook): SimReply {
  const body = req.json;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return validation(['body'], 'Input should be a valid dictionary', 'dict_type', body);
  }
  const model = req.path.slice(1);
  const family = familyOf(model);
  const task = book.create({
    prompt: body.prompt,
    seconds: parseSeconds(body.duration) ?? family.defaultSeconds,
    durationMs: Number(sim.settings['taskMs']),
    data: { app: appPath(model), model, request: answeredFields(body), durationProblem: durationProblem(body.duration, family) },
  });
  const hook = req.query.get('fal_webhook');
  if (hook) callBackWhenReady(hook, task.readyAt, () => webhookPayload(sim, book, task), 3, (bytes) => signFalWebhook(sim, task.id, bytes));
  return {
    status: 200,
    json: {
      status: 'IN_QUEUE',
      request_id: task.id,
      gateway_request_id: task.id,
      ...urls(sim, task),
      queue_position: 0,
      sim_trace_id: `trace-${task.id.slice(0, 8)}`,
    },
  };
}

/**
 * What a result answers from, of the request: its duration, prompt and video count, and the image
 * field a failed download names (with its value when short: a data URI is echoed cut, so a task
 * never keeps megabytes of a body). The body itself is not kept.
 */
function answeredFields(body: Record<string, any>): { duration?: Json; prompt?: unknown; num_videos?: unknown; imageField: string; image: Json } {
  const imageField = Object.keys(body).find((k) => /image_urls?$/.test(k)) ?? 'image_url';
  const image = body[imageField];
  return {
    ...keptFields(body, ['duration', 'num_videos']),
    prompt: typeof body.prompt === 'string' ? body.prompt : undefined,
    imageField,
    image: typeof image === 'string' && image.length > MAX_ECHO ? `${image.slice(0, MAX_ECHO)}...` : typeof image === 'string' ? image : null,
  };
}
const MAX_ECHO = 256;

/** What the model's own input validation would say about `duration` (checked by the runner, so seen at the result). */
function durationProblem(v: Json | undefined, family: Family): string | undefined {
  if (v === undefined) return undefined;
  const secs = parseSeconds(v);
  const inFormat = isInFormat(v, family.format);
  if (inFormat && (!family.allowed || (secs !== undefined && family.allowed.includes(secs)))) return undefined;
  const spell = (n: number): string => (family.format === 'suffix_s' ? `'${n}s'` : family.format === 'string' ? `'${n}'` : String(n));
  return family.allowed ? `Input should be ${family.allowed.map(spell).join(', ')}` : `Input should be a valid ${family.format === 'integer' ? 'integer' : 'string'}`;
}

function status(req: SimRequest, sim: SimServer, book: TaskBook, task: SimTask): SimReply {
  const phase = task.cancelled ? 'done' : book.phase(task);
  const withLogs = req.query.get('logs') === '1';
  const common = { request_id: task.id, ...urls(sim, task), sim_trace_id: `trace-${task.id.slice(0, 8)}` };
  const logs = withLogs ? [{ message: `sim: ${phase}`, level: 'INFO', source: 'USER', timestamp: new Date().toISOString() }] : null;
  if (phase === 'queued') return { status: 202, json: { status: 'IN_QUEUE', queue_position: 0, ...common } };
  if (phase === 'running') return { status: 202, json: { status: 'IN_PROGRESS', logs, ...common } };
  const inference = (Math.min(Date.now(), task.readyAt) - task.createdAt) / 1000;
  return { status: 200, json: { status: 'COMPLETED', logs, metrics: { inference_time: inference }, ...common } };
}

function cancel(book: TaskBook, task: SimTask): SimReply {
  if (task.cancelled || book.phase(task) !== 'queued') return { status: 400, json: { status: 'ALREADY_COMPLETED' } };
  task.cancelled = true;
  task.readyAt = Date.now();
  return { status: 202, json: { status: 'CANCELLATION_REQUESTED' } };
}

function result(sim: SimServer, book: TaskBook, task: SimTask): SimReply {
  if (!task.cancelled && book.phase(task) !== 'done') return { status: 400, json: { detail: 'Request is still in progress' } };
  const headers = { 'x-fal-request-id': task.id };
  if (task.cancelled) {
    return requestError(499, 'Request was cancelled by the client', 'client_cancelled', headers);
  }
  const body = task.data['request'] as ReturnType<typeof answeredFields>;
  const problem = task.data['durationProblem'] as string | undefined;
  if (problem) return validation(['body', 'duration'], problem, 'literal_error', body.duration, headers);
  switch (task.outcome) {
    case 'moderation':
      return modelError(['body', 'prompt'], 'The content could not be processed because it contained material flagged by a content checker.', 'content_policy_violation', body.prompt, headers);
    case 'bad-image':
      return modelError(['body', body.imageField], 'Failed to download the file. Please check that the URL is accessible.', 'file_download_error', body.image, headers);
    case 'bad-combo':
      return validation(['body', 'duration'], 'This duration is not supported together with the requested resolution and aspect ratio.', 'value_error', body.duration ?? null, headers);
    case 'fail':
      return requestError(503, 'Runner disconnected unexpectedly', 'runner_disconnected', headers);
    case 'no-video':
      return { status: 200, headers, json: { video: null, seed: 424242, sim_trace_id: `trace-${task.id.slice(0, 8)}` } };
    case 'success':
      break;
  }
  const size = sim.settings['videoBytes'] ?? sampleMp4().length;
  const video: Record<string, unknown> = {
    url: `${sim.settings['cdnOrigin'] ?? sim.url}/files/sim/${task.id}/output.mp4`,
    content_type: 'video/mp4',
    file_name: 'output.mp4',
    file_size: size,
  };
  if (sim.settings['reportDuration']) video['duration'] = task.seconds;
  const asked = typeof body.num_videos === 'number' && Number.isInteger(body.num_videos) ? body.num_videos : 1;
  if (asked > 1) {
    const made = String(body.prompt ?? '').includes('[one-short]') ? asked - 1 : asked;
    const videos = Array.from({ length: made }, (_, i) => ({ ...video, url: String(video['url']).replace('output.mp4', `output-${i}.mp4`), file_name: `output-${i}.mp4` }));
    return { status: 200, headers, json: { videos, seed: 424242, sim_trace_id: `trace-${task.id.slice(0, 8)}` } };
  }
  return { status: 200, headers, json: { video, seed: 424242, sim_trace_id: `trace-${task.id.slice(0, 8)}` } };
}

/** fal's webhook body: the result as `payload`, status OK, or ERROR with the failed result's body. */
function webhookPayload(sim: SimServer, book: TaskBook, task: SimTask): Record<string, unknown> {
  const res = result(sim, book, task) as { status?: number; json?: unknown };
  const ok = res.status === 200;
  return {
    request_id: task.id,
    gateway_request_id: task.id,
    status: ok ? 'OK' : 'ERROR',
    ...(ok ? {} : { error: `Invalid status code: ${res.status}` }),
    payload: res.json ?? null,
  };
}

function modelError(loc: unknown[], msg: string, type: string, input: unknown, headers: Record<string, string> = {}): SimReply {
  return {
    status: 422,
    headers: { ...headers, 'x-fal-retryable': 'false' },
    json: { detail: [{ loc, msg, type, url: `https://docs.fal.ai/errors#${type}`, input: input ?? null }] },
  };
}

const validation = modelError;

function requestError(status: number, detail: string, errorType: string, headers: Record<string, string>): SimReply {
  return { status, headers: { ...headers, 'x-fal-error-type': errorType }, json: { detail, error_type: errorType } };
}

function content(req: SimRequest, sim: SimServer, task: SimTask | undefined): SimReply {
  if (!task || task.outcome !== 'success' || task.cancelled) return { status: 404, body: 'Not Found' };
  const big = sim.settings['videoBytes'] as number | undefined;
  return serveVideo(req, big);
}
