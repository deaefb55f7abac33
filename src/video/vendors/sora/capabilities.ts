import type { VideoCapabilities } from '../../types.js';
import { SORA_DEFAULT_SECONDS, SORA_SECONDS } from './adapter.js';

/**
 * OpenAI's video API (and Azure's Sora 2 deployments, which speak it): the documented durations
 * and sizes, a first frame (input_reference), remix, edits, extensions and characters, thumbnail
 * and spritesheet variants. There is no call that stops a running job (DELETE removes finished
 * videos only). Finished videos can be downloaded for an hour (the video object's expires_at).
 */
export function soraCapabilities(_model: string): VideoCapabilities {
  return {
    durations: [...SORA_SECONDS],
    default_seconds: SORA_DEFAULT_SECONDS,
    sizes: ['720x1280', '1280x720', '1024x1792', '1792x1024', '1920x1080', '1080x1920'],
    default_size: '720x1280',
    first_frame: true,
    last_frame: false,
    references: false,
    audio: true,
    remix: true,
    edit: true,
    extend: true,
    characters: true,
    cancel: false,
    variants: ['video', 'thumbnail', 'spritesheet'],
    content_ttl_seconds: 3600,
  };
}
