import { errors } from '../core/errors.js';
import type { Upstream, UpstreamRequest, UpstreamResponse } from '../http/types.js';
import type { JobRecord } from '../store/job-types.js';
import type { VideoDeps } from './deps.js';
import { taskRefOf } from './refresh.js';
import type { DeriveInput, DeriveOp, UploadedVideo, VideoVendor } from './types.js';

/** What an edit or an extension (OpenAI's /videos/edits, /videos/extensions) adds to a create. */
export interface DeriveRequest {
  op: DeriveOp;
  prompt: string;
  /** The account's finished job it starts from: the new task runs on that job's upstream. */
  source?: JobRecord;
  /** Or a video the client uploaded (any upstream serving the model can take it). */
  file?: UploadedVideo;
  /** The source's duration when known: an edit holds it, an extension of a finished job bills past it. */
  sourceSeconds?: number;
  /** An extension's new segment. */
  seconds?: number;
}

const NAMES: Record<DeriveOp, string> = { edit: 'Video edits', extend: 'Video extensions' };

/**
 * 400 unless the model's capabilities allow the operation and its vendor's adapter has the call:
 * the vendor folder decides (an adapter without `derive.edit` makes no edits), never a vendor name here.
 */
export function checkDerivable(deps: Pick<VideoDeps, 'capabilities' | 'vendors'>, model: string, vendorId: string, op: DeriveOp): VideoVendor {
  const vendor = deps.vendors.get(vendorId);
  if (!deps.capabilities(model)?.[op] || !vendor?.derive?.[op])
    throw errors.invalidRequest(`${NAMES[op]} are not supported for model '${model}'.`, 'model', 'operation_unsupported');
  return vendor;
}

/**
 * The seconds an edit or extension holds: an edit is billed like a create as long as its source,
 * an extension for its new segment only (the source was paid for when it was made, or is the client's).
 */
export function deriveHoldSeconds(d: DeriveRequest): number {
  const s = d.op === 'edit' ? d.sourceSeconds : d.seconds;
  // The route refuses a request without the figure (an upload whose length cannot be read): unreachable.
  if (s === undefined || !(s > 0)) throw errors.internal('An edit or extension reached the create without its length.');
  return s;
}

function inputFor(d: DeriveRequest, model: string, upstreamModel: string): DeriveInput {
  const source = d.source ? { task: taskRefOf(d.source) } : d.file ? { file: d.file } : undefined;
  if (!source) throw errors.internal('An edit or extension reached the create without its source.');
  return { model, upstreamModel, prompt: d.prompt, source, sourceSeconds: d.sourceSeconds, seconds: d.seconds };
}

/** The vendor's request for the operation on one upstream. */
export function buildDerive(vendor: VideoVendor, d: DeriveRequest, model: string, upstreamModel: string, up: Upstream): UpstreamRequest {
  const build = vendor.derive?.[d.op];
  if (!build) throw errors.internal('The vendor lost the operation it was checked for.');
  return build(inputFor(d, model, upstreamModel), up);
}

/** The new task from the vendor's 2xx answer. */
export function parseDerive(vendor: VideoVendor, d: DeriveRequest, res: UpstreamResponse, model: string, upstreamModel: string, up: Upstream) {
  if (!vendor.derive) throw errors.internal('The vendor lost the operation it was checked for.');
  return vendor.derive.parse(d.op, res, inputFor(d, model, upstreamModel), up);
}
