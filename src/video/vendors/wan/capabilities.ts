import type { VideoCapabilities } from '../../types.js';
import { DEFAULT_SECONDS, wanModelInfo } from './models.js';

/**
 * DashScope Wan: frames and references by model kind (the same parse the adapter uses); a PENDING
 * task can be cancelled (POST /api/v1/tasks/{id}/cancel); result URLs live 24 hours.
 */
export function wanCapabilities(model: string): VideoCapabilities {
  const info = wanModelInfo(model);
  return {
    default_seconds: DEFAULT_SECONDS,
    first_frame: info.frames.first,
    last_frame: info.frames.last,
    references: info.takesReferences,
    // r2v models take reference videos (input.media items of type reference_video).
    video_reference: info.takesReferences,
    audio: info.mediaProtocol,
    remix: false,
    cancel: true,
    variants: ['video'],
    content_ttl_seconds: 24 * 3600,
  };
}
