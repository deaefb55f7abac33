import { errors } from '../../../core/errors.js';
import type { VideoVendor } from '../../types.js';
import { TASKS_PATH } from './models.js';
import { authHeaders, buildWanCreate, estimateWanSeconds, validateWan, WAN_INPUT_FIELDS } from './request.js';
import { classifyWanError, parseWanCreate, parseWanPoll } from './response.js';

/**
 * Vendor A: Wan models on Alibaba Cloud Model Studio (DashScope). Create with the async header, poll
 * /api/v1/tasks/{id}, download the pre-signed OSS URL (which must not carry our key).
 */
export const wanVendor: VideoVendor = {
  id: 'wan',
  label: 'wan (DashScope)',
  // Cross-vendor-common names (duration, seed, negative_prompt, ...) are deliberately absent.
  ownedParams: new Set([
    'input',
    'parameters',
    ...WAN_INPUT_FIELDS,
    // parameters.* fields only Wan takes
    'prompt_extend',
    'watermark',
    'audio',
    'shot_type',
    'audio_setting',
    'enable_thinking',
  ]),
  validate: validateWan,
  estimateSeconds: estimateWanSeconds,
  buildCreate: buildWanCreate,
  parseCreate: (res, input) => parseWanCreate(res, estimateWanSeconds(input)),
  buildPoll: (task, up) => ({
    method: 'GET',
    url: `${up.baseUrl}${TASKS_PATH}/${encodeURIComponent(task.taskId)}`,
    headers: authHeaders(up),
  }),
  parsePoll: (res, task) => parseWanPoll(res, task),
  // DashScope cancels only PENDING tasks; a running one answers 400 and finishes (and bills) as usual.
  buildCancel: (task, up) => ({
    method: 'POST',
    url: `${up.baseUrl}${TASKS_PATH}/${encodeURIComponent(task.taskId)}/cancel`,
    headers: authHeaders(up),
  }),
  // The video URL is pre-signed OSS storage: no auth header (sending our key there would leak it).
  // It comes from the vendor's answer, not from the config, so the download checks its address
  // (content.ts) as it does every redirect.
  buildContent: (_task, output) => {
    if (!output.url) throw errors.internal('A wan output without a URL cannot be downloaded.');
    return { method: 'GET', url: output.url, headers: {} };
  },
  classifyError: classifyWanError,
};
