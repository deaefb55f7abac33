import { sniffVideo } from '../../../core/sniff.js';
import { randomUUID } from 'node:crypto';
import { bearer, SimServer, type SimReply, type SimRequest } from '../../../sim/framework.js';
import { sampleMp4, syntheticVideoBytes } from '../../../sim/media.js';
import { TaskBook, type SimTask } from '../../../sim/tasks.js';
import type { SimulatorOptions } from '../module.js';
import { serveObject } from '../../../sim/gcs-storage.js';
import { TokenIssuer } from '../../../sim/google-token.js';

/**
 * Vertex AI Veo simulator on loopback: `:predictLongRunning`, `:fetchPredictOperation`, a token
 * endpoint at /token and a Cloud Storage JSON API read path for gs:// results. Accepts as Bearer
 * tokens the ones its token endpoint issued and the static key (options.apiKey, default "sim-key").
 * Settings: taskMs, apiKey, videoBytes (size of the videos, stored or returned inline),
 * serviceAccount (generated key), issuer (the TokenIssuer).
 */
const MODEL_PATH =
  /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/google\/models\/([^/:]+):(predictLongRunning|fetchPredictOperation)$/;
const STORAGE_PATH = /^\/storage\/v1\/b\/([^/]+)\/o\/(.+)$/;
const RESPONSE_TYPE = 'type.googleapis.com/cloud.ai.large_models.vision.GenerateVideoResponse';

export async function startVeoSim(opts: SimulatorOptions = {}): Promise<SimServer> {
  const issuer = new TokenIssuer();
  /** "bucket/object" of every video the simulator has written (for as long as it keeps their operation). */
  const objects = new Set<string>();
  const tasks = new TaskBook(opts.tasks, (task) => {
    for (const o of objects) if (o.includes(`/${task.id}/`)) objects.delete(o);
  });
  const sim = await SimServer.start(
    'veo',
    (req, s) => route(req, s, { tasks, issuer, objects }),
    { port: opts.port, settings: { taskMs: opts.taskMs ?? 3000, apiKey: opts.apiKey ?? 'sim-key', issuer } },
  );
  sim.settings['serviceAccount'] = issuer.newServiceAccount(`${sim.url}/token`, 'veo-sim-project');
  sim.tasks = tasks;
  return sim;
}

interface State {
  tasks: TaskBook;
  issuer: TokenIssuer;
  objects: Set<string>;
}

function route(req: SimRequest, sim: SimServer, st: State): SimReply {
  if (req.method === 'POST' && req.path === '/token') return st.issuer.handle(req, `${sim.url}/token`);
  const token = bearer(req);
  const authed = st.issuer.isValid(token) || (token !== undefined && token === sim.settings['apiKey']);
  const storage = STORAGE_PATH.exec(req.path);
  if (storage && req.method === 'GET') {
    if (!authed) return gcsError(401, 'Anonymous caller does not have storage.objects.get access to the Google Cloud Storage object.', 'required');
    const bucket = decodeURIComponent(storage[1]!);
    const object = decodeURIComponent(storage[2]!);
    if (!st.objects.has(`${bucket}/${object}`)) return gcsError(404, `No such object: ${bucket}/${object}`, 'notFound');
    return serveObject(req, bucket, object, sim.settings['videoBytes']);
  }
  if (!authed) return unauthenticated();
  const m = MODEL_PATH.exec(req.path);
  if (!m || req.method !== 'POST') return googleError(404, 'NOT_FOUND', `The requested URL ${req.path} was not found on this server.`);
  const [, project, location, model, verb] = m as unknown as [string, string, string, string, string];
  if (!/^veo-/.test(model))
    return googleError(404, 'NOT_FOUND', `Publisher Model \`projects/${project}/locations/${location}/publishers/google/models/${model}\` not found.`);
  if (verb === 'predictLongRunning') return create(req, sim, st, project, location, model);
  return fetchOperation(req, sim, st, model);
}

function create(req: SimRequest, sim: SimServer, st: State, project: string, location: string, model: string): SimReply {
  const body = req.json;
  if (!body || typeof body !== 'object' || !Array.isArray(body.instances) || body.instances.length === 0)
    return invalid('Invalid JSON payload: "instances" must be a non-empty list.');
  const inst = body.instances[0] ?? {};
  const params = body.parameters ?? {};
  if (typeof params !== 'object' || Array.isArray(params)) return invalid('Invalid JSON payload: "parameters" must be an object.');
  const veo2 = /^veo-2/.test(model);

  const sampleCount = params.sampleCount ?? 1;
  if (!Number.isInteger(sampleCount) || sampleCount < 1 || sampleCount > 4)
    return invalid(`sampleCount must be an integer between 1 and 4, got ${JSON.stringify(params.sampleCount)}.`);
  const duration = params.durationSeconds ?? 8;
  const allowed = veo2 ? [5, 6, 7, 8] : [4, 6, 8];
  if (!allowed.includes(duration))
    return invalid(`Unsupported output video duration ${JSON.stringify(duration)} seconds, supported durations are [${allowed.join(',')}] for feature text_to_video.`);
  if (veo2 && params.generateAudio !== undefined) return invalid('generateAudio is not supported by this model.');
  if (typeof inst.prompt !== 'string' && inst.image === undefined) return invalid('Text prompt is required for text-to-video.');
  for (const field of ['image', 'lastFrame', 'video', 'mask'] as const) {
    const problem = mediaProblem(inst[field]);
    if (problem) return invalid(`instances[0].${field}: ${problem}`);
  }
  if (inst.lastFrame && !inst.image) return invalid('lastFrame requires image.');
  if (inst.video !== undefined) {
    // Video extension: only the models that extend, and the bytes must be a video.
    if (!veo2 && !/^veo-3\.1/.test(model)) return invalid(`Video extension is not supported by ${model}.`);
    if (!String(inst.video.mimeType).startsWith('video/')) return invalid('instances[0].video: mimeType must be a video type.');
    if (inst.video.bytesBase64Encoded && !sniffVideo(Buffer.from(inst.video.bytesBase64Encoded, 'base64')))
      return invalid('instances[0].video: the bytes are not a supported video (MP4, MOV, WebM).');
    if (inst.referenceImages !== undefined) return invalid('referenceImages cannot be combined with video.');
  }

  const task = st.tasks.create({
    prompt: inst.prompt,
    seconds: duration,
    durationMs: Number(sim.settings['taskMs'] ?? 3000),
    id: randomUUID(),
    data: { project, location, model, sampleCount, storageUri: params.storageUri, prompt: inst.prompt },
  });
  return { json: { name: opName(task) } };
}

function fetchOperation(req: SimRequest, sim: SimServer, st: State, model: string): SimReply {
  const name = req.json?.operationName;
  if (typeof name !== 'string') return invalid('operationName is required.');
  const m = /^projects\/[^/]+\/locations\/[^/]+\/publishers\/google\/models\/([^/]+)\/operations\/([^/]+)$/.exec(name);
  if (!m) return invalid(`Invalid operation name: ${name}`);
  if (m[1] !== model) return invalid(`Operation ${name} does not belong to model ${model}.`);
  const task = st.tasks.get(m[2]!);
  if (!task) return googleError(404, 'NOT_FOUND', `Operation ${name} not found.`);
  const trace = { sim_trace_id: `trace-${task.id.slice(0, 8)}` };
  const phase = st.tasks.phase(task);
  // Real answers omit `done` until the job finishes; some proxies send done:false. Show both.
  if (phase === 'queued') return { json: { name, ...trace } };
  if (phase === 'running') return { json: { name, done: false, metadata: { '@type': 'type.googleapis.com/google.cloud.aiplatform.v1.GenericOperationMetadata' }, ...trace } };
  return { json: { name, done: true, ...finished(task, st, sim.settings['videoBytes']), ...trace } };
}

function finished(task: SimTask, st: State, videoBytes: unknown): Record<string, unknown> {
  const { sampleCount, storageUri, prompt } = task.data as { sampleCount: number; storageUri?: string; prompt?: string };
  switch (task.outcome) {
    case 'moderation':
      return {
        response: {
          '@type': RESPONSE_TYPE,
          raiMediaFilteredCount: sampleCount,
          raiMediaFilteredReasons: [
            "Veo could not generate videos because the input image violates Vertex AI's usage guidelines. Support codes: 17301594",
          ],
        },
      };
    case 'fail':
      return { error: { code: 13, message: 'Internal error encountered.' } };
    case 'bad-image':
      return { error: { code: 3, message: 'Failed to read the input image: the image could not be decoded.' } };
    case 'bad-combo':
      return { error: { code: 3, message: 'Unsupported combination of durationSeconds and resolution for this model.' } };
    case 'no-video':
      return { response: { '@type': RESPONSE_TYPE, raiMediaFilteredCount: 0, videos: [] } };
    case 'success':
      break;
  }
  // "[filter-one]" drops one of several videos, as the safety filter does with a single sample.
  const filtered = sampleCount > 1 && String(prompt ?? '').includes('[filter-one]') ? 1 : 0;
  const videos: Record<string, unknown>[] = [];
  for (let i = 0; i < sampleCount - filtered; i++) {
    if (storageUri) {
      const gcsUri = `${String(storageUri).replace(/\/+$/, '')}/${task.id}/sample_${i}.mp4`;
      st.objects.add(gcsUri.slice('gs://'.length));
      videos.push({ gcsUri, mimeType: 'video/mp4' });
    } else {
      videos.push({ bytesBase64Encoded: inlineBase64(videoBytes), mimeType: 'video/mp4' });
    }
  }
  const response: Record<string, unknown> = { '@type': RESPONSE_TYPE, raiMediaFilteredCount: filtered, videos, sim_model_version: 'sim-veo-1' };
  if (filtered) response['raiMediaFilteredReasons'] = ['One video was filtered for safety. Support codes: 29310472'];
  return { response };
}

/** The last inline video rendered: every poll of a finished job answers it again, tens of MB when large. */
let rendered: { size: number; base64: string } | undefined;

/** The MP4 fixture, or `videoBytes` bytes of synthetic video, as base64. */
function inlineBase64(videoBytes: unknown): string {
  const size = typeof videoBytes === 'number' && videoBytes > 0 ? videoBytes : 0;
  if (rendered?.size !== size) rendered = { size, base64: (size > 0 ? syntheticVideoBytes(size) : sampleMp4()).toString('base64') };
  return rendered.base64;
}

function opName(task: SimTask): string {
  const { project, location, model } = task.data as { project: string; location: string; model: string };
  return `projects/${project}/locations/${location}/publishers/google/models/${model}/operations/${task.id}`;
}

function mediaProblem(v: any): string | undefined {
  if (v === undefined) return undefined;
  if (!v || typeof v !== 'object') return 'must be a Media object.';
  const hasBytes = typeof v.bytesBase64Encoded === 'string' && v.bytesBase64Encoded.length > 0;
  const hasGcs = typeof v.gcsUri === 'string' && v.gcsUri.startsWith('gs://');
  if (hasBytes === hasGcs) return 'exactly one of bytesBase64Encoded or gcsUri is required.';
  if (hasBytes && !/^[A-Za-z0-9+/]+={0,2}$/.test(v.bytesBase64Encoded)) return 'bytesBase64Encoded is not valid base64.';
  if (typeof v.mimeType !== 'string') return 'mimeType is required.';
  return undefined;
}

export function googleError(code: number, status: string, message: string): SimReply {
  return { status: code, json: { error: { code, message, status } } };
}

function invalid(message: string): SimReply {
  return googleError(400, 'INVALID_ARGUMENT', message);
}

function unauthenticated(): SimReply {
  return {
    status: 401,
    headers: { 'www-authenticate': 'Bearer realm="https://accounts.google.com/"' },
    json: {
      error: {
        code: 401,
        message:
          'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
        status: 'UNAUTHENTICATED',
        details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'ACCESS_TOKEN_TYPE_UNSUPPORTED', domain: 'googleapis.com' }],
      },
    },
  };
}

function gcsError(code: number, message: string, reason: string): SimReply {
  return { status: code, json: { error: { code, message, errors: [{ message, domain: 'global', reason }] } } };
}
