import type { VideoCapabilities } from '../../types.js';
import { familyOf } from './families.js';

/**
 * fal.ai: durations from the model family's table (the one the adapter validates with); first and
 * last frames under the family's field names; queued requests can be cancelled
 * (PUT .../requests/{id}/cancel). fal keeps result files for days; the exact window is not promised.
 */
export function falCapabilities(model: string): VideoCapabilities {
  const family = familyOf(model);
  return {
    ...(family.allowed ? { durations: [...family.allowed] } : {}),
    default_seconds: family.defaultSeconds,
    first_frame: true,
    last_frame: true,
    references: false,
    audio: family.id === 'veo3',
    remix: false,
    cancel: true,
    variants: ['video'],
    content_ttl_seconds: null,
  };
}
