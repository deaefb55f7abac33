import type { Upstream } from '../../http/types.js';

/**
 * Where an OpenAI-protocol resource lives on an upstream, and how to authenticate there. One place for
 * every URL form the family uses (embeddings and chat alike):
 * - `api_version` set: Azure OpenAI's deployment form,
 *   `{base}/openai/deployments/{deployment}/{resource}?api-version=...`, with the `api-key` header; the
 *   deployment is the upstream model name (use `model_map`) and the body carries no model.
 * - `azure: true` without `api_version`: Azure's v1 form, `{base}/openai/v1/{resource}` with `api-key`.
 * - otherwise `Authorization: Bearer`, on `{base}/v1/{resource}`; a base URL that already carries a path
 *   (`https://host/v1`, `https://host/v1beta/openai`) gets `/{resource}` appended instead.
 * `organization` and `project` options become OpenAI's `OpenAI-Organization` / `OpenAI-Project` headers.
 */
export interface OpenAiEndpoint {
  url: string;
  headers: Record<string, string>;
  /** False for Azure's deployment form, which takes the model from the path. */
  sendsModel: boolean;
}

/** `models` is the free list `gateway check --probe` reads to test a key. */
export type OpenAiResource = 'embeddings' | 'chat/completions' | 'models';

/** Endpoints per upstream, resource and model, computed on first use (upstreams never change while running). */
const cache = new WeakMap<Upstream, Map<string, OpenAiEndpoint>>();

export function openAiEndpoint(up: Upstream, resource: OpenAiResource, upstreamModel: string): OpenAiEndpoint {
  let byKey = cache.get(up);
  if (!byKey) cache.set(up, (byKey = new Map()));
  const key = `${resource} ${upstreamModel}`;
  let e = byKey.get(key);
  if (!e) byKey.set(key, (e = compute(up, resource, upstreamModel)));
  return e;
}

function compute(up: Upstream, resource: OpenAiResource, upstreamModel: string): OpenAiEndpoint {
  const o = up.options;
  const apiVersion = typeof o['api_version'] === 'string' && o['api_version'] !== '' ? o['api_version'] : undefined;
  const azure = o['azure'] === true || apiVersion !== undefined;
  const headers: Record<string, string> = { accept: 'application/json' };
  if (up.apiKey) {
    if (azure) headers['api-key'] = up.apiKey;
    else headers['authorization'] = `Bearer ${up.apiKey}`;
  }
  if (typeof o['organization'] === 'string') headers['openai-organization'] = o['organization'];
  if (typeof o['project'] === 'string' && !azure) headers['openai-project'] = o['project'];
  if (apiVersion !== undefined) {
    // Azure lists models per resource, not per deployment.
    if (resource === 'models') return { url: `${up.baseUrl}/openai/models?api-version=${encodeURIComponent(apiVersion)}`, headers, sendsModel: false };
    const url = `${up.baseUrl}/openai/deployments/${encodeURIComponent(upstreamModel)}/${resource}?api-version=${encodeURIComponent(apiVersion)}`;
    return { url, headers, sendsModel: false };
  }
  if (azure) return { url: `${up.baseUrl}/openai/v1/${resource}`, headers, sendsModel: true };
  const hasPath = /^[a-z][a-z0-9+.-]*:\/\/[^/]+\/./i.test(up.baseUrl);
  return { url: `${up.baseUrl}${hasPath ? '' : '/v1'}/${resource}`, headers, sendsModel: true };
}
