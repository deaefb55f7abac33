import type { VideoCapabilities } from '../../types.js';
import { DEFAULT_SECONDS, seedanceCaps } from './models.js';

/**
 * Ark Seedance: durations up to the family's maximum, first and last frames, references where the
 * family reads them; a queued task can be cancelled (DELETE on the task); video URLs live 24 hours.
 */
export function seedanceCapabilities(model: string): VideoCapabilities {
  const caps = seedanceCaps(model, model);
  return {
    durations: Array.from({ length: caps.maxSeconds - 1 }, (_, i) => i + 2),
    default_seconds: DEFAULT_SECONDS,
    resolutions: ['480p', '720p', '1080p'],
    first_frame: true,
    last_frame: true,
    references: caps.references.size > 0,
    // Seedance 2.0 reads video_url content items (role reference_video).
    video_reference: caps.references.has('video'),
    audio: caps.family === '1.5-pro' || caps.family === '2.0',
    remix: false,
    cancel: true,
    variants: ['video'],
    content_ttl_seconds: 24 * 3600,
  };
}
