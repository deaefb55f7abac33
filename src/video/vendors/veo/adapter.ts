import { errors } from '../../../core/errors.js';
import { isObject, type JsonObject } from '../../../core/json.js';
import { googleAuthOptionsFrom, googleCredentialSource } from '../../../protocols/google/oauth.js';
import { allowedBuckets, checkBuckets } from './buckets.js';
import type { VideoVendor } from '../../types.js';
import { classifyVertexError } from './errors.js';
import {
  modelUrl,
  OWNED_PARAMS,
  parseGcsUri,
  parseOperationName,
  veoOptions,
  vertexOrigin,
} from './names.js';
import { buildBody, requestedOutput, urlsToFetch, validateRequest } from './request.js';
import { operationData, parseOperation } from './status.js';

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8' } as const;

/**
 * Veo on Vertex AI: `:predictLongRunning` starts a job, `:fetchPredictOperation` (a POST on the model
 * URL) polls it, results are gs:// objects (read through the Cloud Storage JSON API) or inline base64.
 * Authorization comes from `credentials` (Google OAuth), which the core applies to every request.
 */
export const veoVendor: VideoVendor = {
  id: 'veo',
  inlineVideo: true,
  label: 'veo (Vertex AI)',
  ownedParams: OWNED_PARAMS,

  validate(input) {
    validateRequest(input);
  },

  /** Held for every requested video: Vertex bills each of the sampleCount videos. */
  estimateSeconds(input) {
    const { durationSeconds, sampleCount } = requestedOutput(input);
    return durationSeconds * sampleCount;
  },

  inlineMedia(input) {
    return urlsToFetch(input);
  },

  buildCreate(input, up) {
    const o = veoOptions(up);
    const body = buildBody(input, (url) => input.media.get(url), {
      storageUri: o.storageUri,
      generateAudio: o.generateAudio,
    });
    checkBuckets(body, allowedBuckets(up.options));
    return {
      method: 'POST',
      url: modelUrl(vertexOrigin(up, o.location), o.project, o.location, input.upstreamModel, 'predictLongRunning'),
      headers: { ...JSON_HEADERS },
      body,
    };
  },

  parseCreate(res, input) {
    const name = isObject(res.json) ? res.json['name'] : undefined;
    if (typeof name !== 'string' || !name.includes('/operations/'))
      throw errors.upstreamError('Vertex AI answered predictLongRunning without an operation name.');
    const { durationSeconds, sampleCount } = requestedOutput(input);
    // The create answers an operation, as a poll does; its vendor_data is built the same way.
    return { taskId: name, meta: { durationSeconds, sampleCount }, vendorData: operationData(res.json as JsonObject) };
  },

  /** The full operation name is the task id; its project, location and model address the poll. */
  buildPoll(task, up) {
    const op = parseOperationName(task.taskId);
    const o = op ? undefined : veoOptions(up);
    const project = op?.project ?? o!.project;
    const location = op?.location ?? o!.location;
    const model = op?.model ?? task.upstreamModel;
    return {
      method: 'POST',
      url: modelUrl(vertexOrigin(up, location), project, location, model, 'fetchPredictOperation'),
      headers: { ...JSON_HEADERS },
      body: { operationName: task.taskId },
    };
  },

  // A read of an operation that does not exist: Vertex checks the token first, then answers 404.
  buildProbe(up, upstreamModel) {
    const { project, location } = veoOptions(up);
    const taskId = `projects/${project}/locations/${location}/publishers/google/models/${upstreamModel}/operations/gateway-probe-0`;
    return this.buildPoll({ taskId, model: upstreamModel, upstreamModel, meta: {} }, up);
  },

  parsePoll(res, task) {
    return parseOperation(res.json, task.meta);
  },

  buildContent(_task, output, up) {
    const url = output.url;
    if (url?.startsWith('gs://')) {
      const gcs = parseGcsUri(url);
      if (!gcs) throw errors.internal(`Malformed Cloud Storage URI from Vertex AI: ${url}`);
      const { storageBaseUrl } = veoOptions(up);
      const object = encodeURIComponent(gcs.object);
      return {
        method: 'GET',
        url: `${storageBaseUrl}/storage/v1/b/${encodeURIComponent(gcs.bucket)}/o/${object}?alt=media`,
        headers: {},
      };
    }
    if (url && /^https?:\/\//i.test(url)) return { method: 'GET', url, headers: {} };
    throw errors.internal('This Veo output has no downloadable location (inline videos are stored by the gateway).');
  },

  classifyError: classifyVertexError,

  /** Google OAuth from options; a bare upstream api key is taken as a static access token. */
  credentials(up, executor) {
    const opts = googleAuthOptionsFrom(up.options);
    if (!opts.accessToken && !opts.serviceAccount && !opts.keyFile) {
      if (up.apiKey) opts.accessToken = up.apiKey;
      // Nothing configured: send unauthenticated so Vertex's 401 is classified as an auth failure.
      else return { headers: async () => ({}) };
    }
    return googleCredentialSource(opts, executor);
  },
};
