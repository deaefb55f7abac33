import type { VideoCapabilities } from '../../types.js';
import { AZURE_DEFAULT_SECONDS } from './request.js';

/**
 * Azure OpenAI's Sora preview jobs API: whole seconds 1-20, any width x height (the vendor judges),
 * a first frame (uploaded as multipart). No remix, edits, extensions or characters in this API (its
 * adapter has none of those calls, so they answer 400); a queued or running job is cancelled by
 * DELETE /jobs/{id}. Azure keeps generations 24 hours.
 */
export function azureSoraCapabilities(_model: string): VideoCapabilities {
  return {
    durations: Array.from({ length: 20 }, (_, i) => i + 1),
    default_seconds: AZURE_DEFAULT_SECONDS,
    default_size: '480x480',
    first_frame: true,
    last_frame: false,
    references: false,
    // inpaint_items of type video, the video uploaded as a multipart `files` part.
    video_reference: true,
    audio: false,
    remix: false,
    cancel: true,
    variants: ['video'],
    content_ttl_seconds: 24 * 3600,
  };
}
