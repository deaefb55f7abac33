import type { Json, JsonObject } from '../../src/core/json.js';
import type { Upstream, UpstreamVerdict } from '../../src/http/types.js';
import type { CreateInput, StandardVideoRequest } from '../../src/video/types.js';

/**
 * How each video vendor's documented examples (fixtures/vendors/video/<id>/) meet its adapter: the
 * gateway input a client sends for the documented create example, the job state every documented
 * status means, and the verdict every documented error kind means. The expectations come from the
 * vendors' documentation (see each SOURCES.md), not from the adapters.
 */
export type Expected = 'processing' | 'completed' | 'failed' | 'next';

export interface VideoCase {
  upstream: Upstream;
  /** The gateway input for the documented create request. */
  input(doc: JsonObject): CreateInput;
  /** The task id the documented create answer carries. */
  createdTaskId(doc: JsonObject): string;
  /** A poll answer built from the documented example with one documented status value set in it. */
  pollWith(status: string): Json;
  states: Record<string, Expected>;
  /** Verdict kind by the `<code>` part of each `error.<status>.<code>.json`. */
  errors: Record<string, UpstreamVerdict['kind']>;
  /** The part of the built body whose keys must be exactly the documented example's, where that matters. */
  sameKeys?(body: unknown): unknown;
  /** Headers the vendor sends with an error (AWS puts the type in one). */
  errorHeaders?(code: string): Record<string, string>;
}

type Obj = Record<string, any>;

function makeUpstream(over: Partial<Upstream>): Upstream {
  return { name: 'fixture', vendor: '', baseUrl: '', models: [], priority: 0, weight: 1, timeoutMs: 10_000, options: {}, ...over };
}

function makeInput(opts: { model: string; upstreamModel?: string; std?: Partial<StandardVideoRequest>; native?: JsonObject }): CreateInput {
  const std: StandardVideoRequest = {
    model: opts.model,
    prompt: '',
    frameImages: [],
    inputReferences: [],
    ...opts.std,
    sent: { size: opts.std?.size !== undefined, resolution: opts.std?.resolution !== undefined, aspectRatio: opts.std?.aspectRatio !== undefined },
  };
  return { model: opts.model, upstreamModel: opts.upstreamModel ?? opts.model, std, native: opts.native ?? {}, media: new Map() };
}

function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

const size = (s: string, sep: string) => {
  const [w, h] = s.split(sep).map(Number);
  return { width: w!, height: h! };
};

export const videoCases = (load: (id: string, file: string) => Obj): Record<string, VideoCase> => ({
  wan: {
    upstream: makeUpstream({ vendor: 'wan', baseUrl: 'https://dashscope-intl.aliyuncs.com', apiKey: 'sk-test' }),
    // A client asks with the standard fields: `size` and `aspect_ratio` for wan2.6 (a ratio the model
    // does not take as a parameter), `resolution` and `aspect_ratio` for wan2.7; the rest natively.
    input: (doc) => {
      const { size: px, resolution, ratio, duration, ...natives } = doc.parameters as Obj;
      const std = px
        ? { size: size(px, '*'), aspectRatio: '16:9' }
        : { resolution: parseInt(resolution, 10), aspectRatio: ratio as string };
      return makeInput({ model: doc.model as string, std: { prompt: (doc.input as Obj).prompt, seconds: duration, ...std }, native: natives });
    },
    // No parameter the documented example lacks (`ratio` exists for wan2.7 only).
    sameKeys: (body) => (body as Obj).parameters,
    createdTaskId: (doc) => (doc.output as Obj).task_id,
    pollWith: (status) => {
      const body = clone(load('wan', 'poll.SUCCEEDED.json'));
      body.output.task_status = status;
      // FAILED carries output.code/message (documented fields); the code is a documented one.
      if (status === 'FAILED') Object.assign(body.output, { code: 'InternalError.Algo', message: 'Algorithm error.' });
      return body;
    },
    states: { PENDING: 'processing', RUNNING: 'processing', SUCCEEDED: 'completed', FAILED: 'failed', CANCELED: 'failed', UNKNOWN: 'failed' },
    errors: { InvalidApiKey: 'auth', DataInspectionFailed: 'moderation', 'Throttling': 'retryable', InvalidParameter: 'client' },
  },

  seedance: {
    upstream: makeUpstream({ vendor: 'seedance', baseUrl: 'https://ark.ap-southeast.bytepluses.com', apiKey: 'ark-test' }),
    input: (doc) => {
      const content = doc.content as Obj[];
      return makeInput({
        model: doc.model as string,
        std: {
          prompt: content.find((c) => c.type === 'text')!.text,
          frameImages: content.filter((c) => c.type === 'image_url').map((c) => ({ url: c.image_url.url, frameType: 'first_frame' as const })),
        },
      });
    },
    createdTaskId: (doc) => doc.id as string,
    pollWith: (status) => {
      const body = clone(load('seedance', 'poll.succeeded.json'));
      body.status = status;
      if (status !== 'succeeded') delete body.content;
      if (status === 'failed') body.error = { code: 'InternalServiceError', message: 'The service encountered an unexpected internal error.' };
      return body;
    },
    states: { queued: 'processing', running: 'processing', succeeded: 'completed', failed: 'failed', cancelled: 'failed', expired: 'failed' },
    errors: { AuthenticationError: 'auth', InputTextSensitiveContentDetected: 'moderation', RateLimitExceeded: 'retryable', InvalidParameter: 'client' },
  },

  veo: {
    upstream: makeUpstream({
      vendor: 'veo',
      baseUrl: 'https://us-central1-aiplatform.googleapis.com',
      apiKey: undefined,
      options: { project: 'PROJECT_ID', location: 'us-central1', allowed_gcs_buckets: '*' },
    }),
    // The documented body's parameters are Veo's own names: a client sends them natively.
    input: (doc) =>
      makeInput({ model: 'veo-3.1-generate-001', std: { prompt: (doc.instances as Obj[])[0]!.prompt }, native: { parameters: doc.parameters as JsonObject } }),
    createdTaskId: (doc) => doc.name as string,
    pollWith: (status) => {
      const done = clone(load('veo', 'poll.done.json'));
      if (status === 'running') return { name: done.name };
      if (status === 'done') return done;
      if (status === 'filtered') {
        done.response = { '@type': done.response['@type'], raiMediaFilteredCount: 1, raiMediaFilteredReasons: ['Unable to show generated videos.'] };
        return done;
      }
      if (status === 'error') return { name: done.name, done: true, error: { code: 3, message: 'Request contains an invalid argument.' } };
      throw new Error(status);
    },
    states: { running: 'processing', done: 'completed', filtered: 'failed', error: 'failed' },
    errors: { UNAUTHENTICATED: 'auth', RESOURCE_EXHAUSTED: 'retryable', INVALID_ARGUMENT: 'client' },
  },

  sora: {
    upstream: makeUpstream({ vendor: 'sora', baseUrl: 'https://api.openai.com', apiKey: 'sk-test' }),
    input: (doc) => makeInput({ model: doc.model as string, std: { prompt: doc.prompt as string } }),
    createdTaskId: (doc) => doc.id as string,
    pollWith: (status) => {
      const body = clone(load('sora', 'create.response.json'));
      body.status = status;
      if (status === 'completed') body.progress = 100;
      if (status === 'failed') body.error = { code: 'video_generation_failed', message: 'Video generation failed.' };
      return body;
    },
    states: { queued: 'processing', in_progress: 'processing', completed: 'completed', failed: 'failed' },
    errors: { invalid_api_key: 'auth', rate_limit_exceeded: 'retryable', moderation_blocked: 'moderation', invalid_value: 'client' },
  },

  'azure-sora': {
    upstream: makeUpstream({ vendor: 'azure-sora', baseUrl: 'https://my-resource.openai.azure.com', apiKey: 'azure-key', options: { api_version: 'preview' } }),
    input: (doc) =>
      makeInput({
        model: 'sora',
        upstreamModel: doc.model as string,
        std: { prompt: doc.prompt as string, size: { width: doc.width as number, height: doc.height as number }, seconds: doc.n_seconds as number },
      }),
    createdTaskId: (doc) => doc.id as string,
    pollWith: (status) => {
      const body = clone(load('azure-sora', 'create.response.json'));
      body.status = status;
      // A succeeded job lists its generations (the quickstart downloads `generations[0].id`).
      if (status === 'succeeded') body.generations = [{ object: 'video.generation', id: 'gen_01', job_id: body.id, n_seconds: 5, width: 480, height: 480 }];
      if (status === 'failed') body.failure_reason = 'internal_error';
      return body;
    },
    states: { queued: 'processing', preprocessing: 'processing', running: 'processing', processing: 'processing', succeeded: 'completed', failed: 'failed', cancelled: 'failed' },
    errors: { invalid_api_key: 'auth', rate_limit: 'retryable', content_filter: 'moderation' },
  },

  fal: {
    upstream: makeUpstream({ vendor: 'fal', baseUrl: 'https://queue.fal.run', apiKey: 'fal-key' }),
    input: (doc) => makeInput({ model: 'fal-ai/fast-sdxl', std: { prompt: doc.prompt as string } }),
    createdTaskId: (doc) => doc.request_id as string,
    pollWith: (status) => {
      const created = load('fal', 'create.response.json');
      const body: Obj = { status, response_url: created.response_url };
      if (status === 'IN_QUEUE') body.queue_position = 0;
      if (status === 'IN_PROGRESS') body.logs = [];
      return body;
    },
    // COMPLETED means "the result is ready at response_url": one more request, not a state yet.
    states: { IN_QUEUE: 'processing', IN_PROGRESS: 'processing', COMPLETED: 'next' },
    errors: { unauthorized: 'auth', content_policy_violation: 'moderation', rate_limited: 'retryable' },
  },
});
