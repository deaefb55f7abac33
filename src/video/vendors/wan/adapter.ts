import { errors } from '../../../core/errors.js';
import type { VideoVendor } from '../../types.js';
import { TASKS_PATH } from './models.js';
import { authHeaders, buildWanCreate, estimateWanSeconds, validateWan } from './request.js';
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
    'media',
    'template',
    'img_url',
    'first_frame_url',
    'last_frame_url',
    'audio_url',
    'reference_url',
    'reference_urls',
    'reference_video_urls',
    'reference_video_description',
    'head_frame',
    'tail_frame',
    'ref_images_url',
    'mask_image_url',
    'mask_video_url',
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
  buildContent: (_task, output) => {
    if (!output.url) throw errors.internal('A wan output without a URL cannot be downloaded.');
    return { method: 'GET', url: output.url, headers: {} };
  },
  classifyError: classifyWanError,
};
