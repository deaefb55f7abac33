import { errors } from '../../../core/errors.js';
import { isObject, type JsonObject } from '../../../core/json.js';
import { foldCommonDuration, reportedSeconds, secondsParamOf } from '../../duration.js';
import type { Upstream, UpstreamRequest, UpstreamResponse } from '../../../http/types.js';
import type { CreateInput, CreatedTask, FailureCode, TaskRef, VendorStatus, VideoOutput, VideoVendor } from '../../types.js';
import { classifyOpenAiStyle } from '../../../protocols/openai/errors.js';
import { encodeMultipart } from '../../../http/multipart.js';
import { AZURE_DEFAULT_SECONDS, apiVersion, createFields, estimate, mediaUrls, validateAzure } from './request.js';

const LABEL = 'azure-sora (Azure OpenAI)';
const ROOT = '/openai/v1/video/generations';

function authHeaders(up: Upstream): Record<string, string> {
  return up.apiKey ? { 'api-key': up.apiKey } : {};
}

function q(version: string): string {
  return `?api-version=${encodeURIComponent(version)}`;
}

function jobUrl(up: Upstream, version: string, id?: string): string {
  return `${up.baseUrl}${ROOT}/jobs${id === undefined ? '' : `/${encodeURIComponent(id)}`}${q(version)}`;
}

function contentUrl(up: Upstream, version: string, generationId: string): string {
  return `${up.baseUrl}${ROOT}/${encodeURIComponent(generationId)}/content/video${q(version)}`;
}

function buildCreate(input: CreateInput, up: Upstream): UpstreamRequest {
  const { fields, files } = createFields(input, up);
  const url = jobUrl(up, apiVersion(up));
  if (files.length === 0) {
    return { method: 'POST', url, headers: { ...authHeaders(up), 'Content-Type': 'application/json' }, body: fields };
  }
  const { body, contentType } = encodeMultipart(fields, files);
  return { method: 'POST', url, headers: { ...authHeaders(up), 'Content-Type': contentType }, body };
}

function parseCreate(res: UpstreamResponse, _input: CreateInput, up: Upstream): CreatedTask {
  const job = res.json;
  if (!isObject(job) || typeof job.id !== 'string' || job.id === '') {
    throw errors.upstreamError(`${LABEL} accepted the job but its answer carried no job id.`);
  }
  // Polls and downloads keep the api-version the job was created with, even if the config changes.
  const meta: JsonObject = { api_version: apiVersion(up) };
  const seconds = reportedSeconds(job.n_seconds);
  if (seconds !== undefined) meta.n_seconds = seconds;
  // The create answers the job object a poll does: kept whole, as a poll's is.
  return { taskId: job.id, meta, vendorData: { ...job } };
}

function taskVersion(task: TaskRef, up: Upstream): string {
  return typeof task.meta.api_version === 'string' ? task.meta.api_version : apiVersion(up);
}

function buildPoll(task: TaskRef, up: Upstream): UpstreamRequest {
  return { method: 'GET', url: jobUrl(up, taskVersion(task, up), task.taskId), headers: authHeaders(up) };
}

/** input_moderation / output_moderation / internal_error are documented; others are read by their words. */
export function azureFailureCode(reason: string | undefined): FailureCode {
  const r = reason ?? '';
  if (/moderation|content[_ ]?filter|policy/i.test(r)) return 'content_policy_violation';
  if (/image|media|inpaint|file/i.test(r)) return 'invalid_media';
  if (/unsupported|dimension|resolution|duration|combination/i.test(r)) return 'unsupported_parameters';
  return 'generation_failed';
}

function failureMessage(job: JsonObject, reason: string | undefined): string {
  const err = job.error;
  if (isObject(err) && typeof err.message === 'string' && err.message !== '') return err.message;
  if (typeof err === 'string' && err !== '') return err;
  switch (reason) {
    case 'input_moderation':
      return 'The request was blocked by Azure OpenAI input moderation (input_moderation).';
    case 'output_moderation':
      return 'The generated video was blocked by Azure OpenAI output moderation (output_moderation).';
    case 'internal_error':
      return 'Azure OpenAI reported an internal error while generating the video (internal_error).';
    case undefined:
      return 'Video generation failed.';
    default:
      return `Video generation failed (${reason}).`;
  }
}

function parsePoll(res: UpstreamResponse, task: TaskRef, up: Upstream): VendorStatus {
  const job = res.json;
  if (!isObject(job)) throw errors.upstreamError(`${LABEL} answered a poll with something that is not a job object.`);
  // Every generation (extra variants included), ids and timestamps stay visible as vendor_data.
  const vendorData: JsonObject = { ...job };
  const status = typeof job.status === 'string' ? job.status.toLowerCase() : '';
  switch (status) {
    case 'succeeded': {
      const gens = (Array.isArray(job.generations) ? job.generations : []).filter(
        (g): g is JsonObject => isObject(g) && typeof g.id === 'string' && g.id !== '',
      );
      // A figure that is no duration (zero, negative, not a number) counts as missing.
      const jobSeconds = reportedSeconds(job.n_seconds) ?? reportedSeconds(task.meta.n_seconds) ?? AZURE_DEFAULT_SECONDS;
      // `succeeded` is terminal and documented to carry the generations: a job that succeeded without
      // any never gains one later. It is reported as it is, completed with no outputs, and the core
      // fails it at no charge (refresh.ts) instead of holding the funds until the deadline.
      if (gens.length === 0) return { state: 'completed', seconds: jobSeconds, billableSeconds: 0, outputs: [], vendorData };
      const seconds = gens.map((g) => reportedSeconds(g.n_seconds) ?? jobSeconds);
      const version = taskVersion(task, up);
      return {
        state: 'completed',
        seconds: seconds[0]!,
        billableSeconds: seconds.reduce((a, b) => a + b, 0),
        outputs: gens.map((g) => ({ url: contentUrl(up, version, g.id as string), mimeType: 'video/mp4' })),
        vendorData,
      };
    }
    case 'failed': {
      const reason = typeof job.failure_reason === 'string' && job.failure_reason !== '' ? job.failure_reason : undefined;
      return { state: 'failed', code: azureFailureCode(reason), message: failureMessage(job, reason), vendorData };
    }
    case 'cancelled':
    case 'canceled':
      return { state: 'failed', code: 'cancelled', message: 'The video generation job was cancelled.', vendorData };
    case 'expired':
      return { state: 'failed', code: 'expired', message: 'The video generation job expired.', vendorData };
    case 'queued':
      return { state: 'processing', phase: 'queued', vendorData };
    case 'preprocessing':
    case 'running':
    case 'processing':
      return { state: 'processing', phase: 'running', vendorData };
    default:
      return { state: 'processing', vendorData };
  }
}

/**
 * Downloads go by generation id. The id (and api-version) are read back from the output URL this
 * adapter produced, and the request is rebuilt on this upstream's origin so the key never travels
 * to a host taken from stored data.
 */
function buildContent(task: TaskRef, output: VideoOutput, up: Upstream): UpstreamRequest {
  const m = output.url ? /\/video\/generations\/([^/?#]+)\/content\/video(?:\?([^#]*))?/.exec(output.url) : null;
  if (!m) throw errors.upstreamError(`${LABEL}: the finished job has no downloadable generation.`);
  const fromUrl = new URLSearchParams(m[2] ?? '').get('api-version');
  const version = fromUrl ?? taskVersion(task, up);
  return { method: 'GET', url: contentUrl(up, version, decodeURIComponent(m[1]!)), headers: authHeaders(up) };
}

/**
 * Azure's jobs API has one DELETE for a job: a job still queued or running is cancelled (its status
 * turns `cancelled` and no generation is billed), a finished one is removed. Kept on the job's own
 * api-version, like polls.
 */
function buildCancel(task: TaskRef, up: Upstream): UpstreamRequest {
  return { method: 'DELETE', url: jobUrl(up, taskVersion(task, up), task.taskId), headers: authHeaders(up) };
}

export const azureSoraVendor: VideoVendor = {
  id: 'azure-sora',
  label: LABEL,
  // Azure's client request id header, echoed back and kept in Azure's diagnostics.
  requestIdHeader: 'x-ms-client-request-id',
  ownedParams: new Set(['n_seconds', 'n_variants', 'width', 'height', 'inpaint_items']),
  // The common `duration` means `n_seconds` here, unless `seconds` or `n_seconds` is sent too.
  validate: (input) => validateAzure(foldCommonDuration(input), secondsParamOf(input)),
  estimateSeconds: (input) => estimate(foldCommonDuration(input)),
  inlineMedia: mediaUrls,
  buildCreate: (input, up) => buildCreate(foldCommonDuration(input), up),
  parseCreate,
  buildPoll,
  parsePoll,
  buildContent,
  buildCancel,
  classifyError: (res) =>
    classifyOpenAiStyle(
      res,
      (env, status) =>
        env.code === 'DeploymentNotFound' ||
        /apiversion/i.test(env.code ?? '') ||
        /api[- ]?version/i.test(env.message) ||
        (status === 404 && /deployment/i.test(env.message)),
    ),
};
