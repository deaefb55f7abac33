import type { VideoCapabilities } from '../../types.js';
import { DEFAULT_DURATION_SECONDS, isVeo2 } from './names.js';
import { extendsVideo } from './request.js';

/**
 * Vertex AI Veo: first and last frames and reference images (sent inline as base64), audio on Veo 3
 * and later. No remix; no cancel for predictLongRunning operations. Results land in the client's
 * bucket (storage_uri) or are kept by the gateway, so they do not expire.
 */
export function veoCapabilities(model: string): VideoCapabilities {
  const veo2 = isVeo2(model);
  return {
    durations: veo2 ? [5, 6, 7, 8] : [4, 6, 8],
    default_seconds: DEFAULT_DURATION_SECONDS,
    resolutions: veo2 ? ['720p'] : ['720p', '1080p'],
    aspect_ratios: ['16:9', '9:16'],
    default_size: '1280x720',
    first_frame: true,
    last_frame: true,
    references: true,
    // instances[].video: Veo 2 and 3.1 extend a given video; Veo 3.0 takes none.
    video_reference: extendsVideo(model),
    audio: !veo2,
    remix: false,
    cancel: false,
    variants: ['video'],
    content_ttl_seconds: null,
  };
}
