import { errors } from '../core/errors.js';
import type { StandardVideoRequest, VideoCapabilities } from './types.js';

export type { VideoCapabilities } from './types.js';

/** Rejects, before any money moves or any upstream call, what the model's capabilities exclude. */
export function checkCapabilities(model: string, caps: VideoCapabilities, std: StandardVideoRequest): void {
  if (std.seconds !== undefined && caps.durations && !caps.durations.includes(std.seconds))
    throw errors.invalidRequest(`seconds must be one of ${caps.durations.join(', ')} for ${model}; got ${std.seconds}.`, 'seconds');
  if (std.size && std.sent.size && caps.sizes) {
    const size = `${std.size.width}x${std.size.height}`;
    if (!caps.sizes.includes(size)) throw errors.invalidRequest(`size must be one of ${caps.sizes.join(', ')} for ${model}; got ${size}.`, 'size');
  }
  if (std.resolution !== undefined && std.sent.resolution && caps.resolutions && !caps.resolutions.includes(`${std.resolution}p`))
    throw errors.invalidRequest(`resolution must be one of ${caps.resolutions.join(', ')} for ${model}.`, 'resolution');
  if (std.aspectRatio && std.sent.aspectRatio && caps.aspect_ratios && !caps.aspect_ratios.includes(std.aspectRatio))
    throw errors.invalidRequest(`aspect_ratio must be one of ${caps.aspect_ratios.join(', ')} for ${model}.`, 'aspect_ratio');
  if (!caps.first_frame && std.frameImages.some((f) => f.frameType === 'first_frame'))
    throw errors.invalidRequest(`${model} does not take a first frame image (input_reference).`, 'frame_images', 'unsupported_input_reference');
  if (!caps.last_frame && std.frameImages.some((f) => f.frameType === 'last_frame'))
    throw errors.invalidRequest(`${model} can pin only the first frame; last_frame is not supported.`, 'frame_images');
  if (!caps.references && !caps.video_reference && std.inputReferences.length > 0)
    throw errors.invalidRequest(`${model} does not take input_references.`, 'input_references', 'unsupported_input_reference');
}

/** The config's per-model override laid over the vendor's declaration (each key replaces whole). */
export function withOverride(base: VideoCapabilities, override: Partial<VideoCapabilities> | undefined): VideoCapabilities {
  return override ? { ...base, ...override } : base;
}
