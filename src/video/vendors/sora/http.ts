import type { Upstream } from '../../../http/types.js';
import { stringOption } from '../../../protocols/openai/video-sizes.js';

/**
 * `auth_style: "api-key"` lets the same adapter talk to Azure OpenAI's Sora 2 deployments, which
 * speak this protocol under {resource}/openai/v1/videos but authenticate with an `api-key` header.
 */
export function authHeaders(up: Upstream): Record<string, string> {
  const h: Record<string, string> = {};
  if (up.apiKey) {
    if (stringOption(up.options, 'auth_style') === 'api-key') h['api-key'] = up.apiKey;
    else h['Authorization'] = `Bearer ${up.apiKey}`;
  }
  const org = stringOption(up.options, 'organization');
  const project = stringOption(up.options, 'project');
  if (org) h['OpenAI-Organization'] = org;
  if (project) h['OpenAI-Project'] = project;
  return h;
}

export function videoUrl(up: Upstream, id?: string, tail = ''): string {
  return `${up.baseUrl}/v1/videos${id === undefined ? '' : `/${encodeURIComponent(id)}`}${tail}`;
}


/** The extension of an uploaded video's sniffed type, for the neutral file name the vendor is sent. */
export function videoExt(mimeType: string): string {
  return mimeType === 'video/quicktime' ? 'mov' : mimeType === 'video/webm' ? 'webm' : 'mp4';
}
