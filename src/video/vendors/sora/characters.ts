import { errors } from '../../../core/errors.js';
import { isObject } from '../../../core/json.js';
import { encodeMultipart } from '../../../http/multipart.js';
import type { Upstream, UpstreamResponse } from '../../../http/types.js';
import type { VendorCharacter, VideoCharacters } from '../../types.js';
import { authHeaders, videoExt } from './http.js';

function characterUrl(up: Upstream, id?: string): string {
  return `${up.baseUrl}/v1/videos/characters${id === undefined ? '' : `/${encodeURIComponent(id)}`}`;
}

function parseCharacter(res: UpstreamResponse): VendorCharacter {
  const v = res.json;
  if (!isObject(v) || typeof v.id !== 'string' || v.id === '') throw errors.upstreamError('sora (OpenAI) answered with no character id.');
  const { id, name, created_at: createdAt, ...rest } = v;
  return { id, name: typeof name === 'string' ? name : null, createdAt: typeof createdAt === 'number' ? Math.floor(createdAt) : 0, vendorData: rest };
}

/** `POST /videos/characters` (multipart: `name`, the file `video`) and `GET /videos/characters/{id}`. */
export const soraCharacters: VideoCharacters = {
  create: ({ name, video }, up) => {
    const { body, contentType } = encodeMultipart({ name }, [{ field: 'video', filename: `character.${videoExt(video.mimeType)}`, contentType: video.mimeType, data: video.data }]);
    return { method: 'POST', url: characterUrl(up), headers: { ...authHeaders(up), 'Content-Type': contentType }, body };
  },
  get: (id, up) => ({ method: 'GET', url: characterUrl(up, id), headers: authHeaders(up) }),
  parse: parseCharacter,
};
