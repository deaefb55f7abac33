import { errors } from '../../../core/errors.js';
import type { VideoVendor } from '../../types.js';
import { authHeaders, buildSeedanceCreate, estimateSeedanceSeconds, tasksUrl, validateSeedance } from './request.js';
import { classifySeedanceError, parseSeedanceCreate, parseSeedancePoll } from './response.js';

/**
 * Vendor B: ByteDance Seedance on Volcengine Ark / BytePlus ModelArk. One content-generation task API:
 * create with content[], poll the task object, download the pre-signed TOS URL without our key.
 */
export const seedanceVendor: VideoVendor = {
  id: 'seedance',
  label: 'seedance (Ark)',
  // Cross-vendor-common names (duration, seed, ...) and standard ones (resolution, ratio) stay out.
  ownedParams: new Set([
    'content',
    'camera_fixed',
    'watermark',
    'draft',
    'callback_url',
    'frames',
    'return_last_frame',
    'service_tier',
    'execution_expires_after',
    'generate_audio',
    'tools',
  ]),
  callbackParam: 'callback_url',
  validate: validateSeedance,
  estimateSeconds: estimateSeedanceSeconds,
  buildCreate: buildSeedanceCreate,
  parseCreate: (res, input) => parseSeedanceCreate(res, estimateSeedanceSeconds(input)),
  buildPoll: (task, up) => ({ method: 'GET', url: `${tasksUrl(up)}/${encodeURIComponent(task.taskId)}`, headers: authHeaders(up) }),
  parsePoll: (res, task) => parseSeedancePoll(res, task),
  // Ark's DELETE cancels a queued task; a running one is refused and finishes as usual.
  buildCancel: (task, up) => ({ method: 'DELETE', url: `${tasksUrl(up)}/${encodeURIComponent(task.taskId)}`, headers: authHeaders(up) }),
  // content.video_url is pre-signed TOS storage: sending our key there would leak it.
  buildContent: (_task, output) => {
    if (!output.url) throw errors.internal('A seedance output without a URL cannot be downloaded.');
    return { method: 'GET', url: output.url, headers: {} };
  },
  classifyError: classifySeedanceError,
};
