import { errors } from '../../../core/errors.js';
import type { JsonObject } from '../../../core/json.js';
import type { Upstream } from '../../../http/types.js';

/** Every Veo model on Vertex defaults to 8 seconds when durationSeconds is not sent. */
export const DEFAULT_DURATION_SECONDS = 8;
export const DEFAULT_LOCATION = 'us-central1';
export const DEFAULT_STORAGE_BASE_URL = 'https://storage.googleapis.com';

/**
 * Natives that belong to `instances[0]` on the wire. Key: accepted client name; value: Vertex name.
 * `mask_mode`/`maskMode` are folded into the `mask` media object.
 */
export const INSTANCE_ALIASES: Readonly<Record<string, string>> = {
  image: 'image',
  last_frame: 'lastFrame',
  lastFrame: 'lastFrame',
  input_video: 'video',
  video: 'video',
  mask: 'mask',
  mask_mode: 'maskMode',
  maskMode: 'maskMode',
  reference_images: 'referenceImages',
  referenceImages: 'referenceImages',
  camera_control: 'cameraControl',
  cameraControl: 'cameraControl',
};

/**
 * snake_case (and cross-vendor common) names converted to the camelCase `parameters` field.
 * A camelCase native always wins over its alias; names not listed here pass through unchanged.
 */
export const PARAMETER_ALIASES: Readonly<Record<string, string>> = {
  duration: 'durationSeconds',
  duration_seconds: 'durationSeconds',
  n: 'sampleCount',
  sample_count: 'sampleCount',
  // The Gen AI SDK's name (GenerateVideosConfig.number_of_videos), which it sends as sampleCount: Vertex
  // knows only sampleCount, and a count sent under another name would escape the hold and the 1-4 check.
  numberOfVideos: 'sampleCount',
  number_of_videos: 'sampleCount',
  negative_prompt: 'negativePrompt',
  person_generation: 'personGeneration',
  enhance_prompt: 'enhancePrompt',
  generate_audio: 'generateAudio',
  compression_quality: 'compressionQuality',
  resize_mode: 'resizeMode',
  storage_uri: 'storageUri',
  pubsub_topic: 'pubsubTopic',
};

/** An own entry of an alias table (never an Object.prototype member such as `toString`). */
export function alias(table: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

/**
 * Names this vendor owns (spec 2.3 rule 3): every native name and every snake_case alias it
 * converts, including aliases other vendors also use natively (generate_audio, enhance_prompt):
 * a name owned by several vendors is accepted by each of them and refused by the rest. Generic
 * names (image, video, seed ...) stay unclaimed so they pass through to anyone.
 */
export const OWNED_PARAMS: ReadonlySet<string> = new Set([
  // Vertex's own nested wrappers: a native `parameters` object merges with the derived one (spec 2.3 rule 4).
  'parameters',
  'instances',
  'sampleCount',
  'sample_count',
  'numberOfVideos',
  'number_of_videos',
  'personGeneration',
  'person_generation',
  'enhancePrompt',
  'compressionQuality',
  'compression_quality',
  'resizeMode',
  'resize_mode',
  'storageUri',
  'storage_uri',
  'generateAudio',
  'generate_audio',
  'enhance_prompt',
  'negativePrompt',
  'durationSeconds',
  'duration_seconds',
  'aspectRatio',
  'lastFrame',
  'last_frame',
  'input_video',
  'mask',
  'maskMode',
  'mask_mode',
  'referenceImages',
  'reference_images',
  'cameraControl',
  'camera_control',
  'pubsubTopic',
  'pubsub_topic',
]);

export interface VeoOptions {
  project: string;
  location: string;
  storageBaseUrl: string;
  /** Default output bucket prefix; a native storageUri wins. */
  storageUri?: string;
  /** Default for generateAudio on models that take it (Veo 3.x); unset means true. */
  generateAudio?: boolean;
}

export function veoOptions(up: Upstream): VeoOptions {
  const o = up.options;
  const project = str(o['project']);
  if (!project) throw errors.internal(`Upstream '${up.name}' (veo) has no 'project' option.`);
  return {
    project,
    location: str(o['location']) ?? DEFAULT_LOCATION,
    storageBaseUrl: (str(o['storage_base_url']) ?? DEFAULT_STORAGE_BASE_URL).replace(/\/+$/, ''),
    storageUri: str(o['storage_uri']),
    generateAudio: typeof o['generate_audio'] === 'boolean' ? o['generate_audio'] : undefined,
  };
}

function str(v: JsonObject[string] | undefined): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

/** The Vertex origin: the configured base URL, else the regional (or global) endpoint of the location. */
export function vertexOrigin(up: Upstream, location: string): string {
  if (up.baseUrl) return up.baseUrl.replace(/\/+$/, '');
  return location === 'global' ? 'https://aiplatform.googleapis.com' : `https://${location}-aiplatform.googleapis.com`;
}

export function modelUrl(origin: string, project: string, location: string, model: string, verb: string): string {
  const seg = encodeURIComponent;
  return `${origin}/v1/projects/${seg(project)}/locations/${seg(location)}/publishers/google/models/${seg(model)}:${verb}`;
}

export interface OperationName {
  project: string;
  location: string;
  model: string;
  id: string;
}

/** projects/P/locations/L/publishers/google/models/M/operations/ID: the model is segment 7. */
export function parseOperationName(name: string): OperationName | undefined {
  const m = /^projects\/([^/]+)\/locations\/([^/]+)\/publishers\/[^/]+\/models\/([^/]+)\/operations\/([^/]+)$/.exec(name);
  return m ? { project: m[1]!, location: m[2]!, model: m[3]!, id: m[4]! } : undefined;
}

/** Splits gs://bucket/path/to/object. */
export function parseGcsUri(uri: string): { bucket: string; object: string } | undefined {
  const m = /^gs:\/\/([^/]+)\/(.+)$/.exec(uri);
  return m ? { bucket: m[1]!, object: m[2]! } : undefined;
}

/** veo-2 models take no generateAudio and no resolution (720p only). */
export function isVeo2(model: string): boolean {
  return /^veo-2(\.|-|$)/.test(model);
}
