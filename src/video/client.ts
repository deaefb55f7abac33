import { redactorFor } from '../core/redact.js';
import type { Executor, StreamResponse } from '../http/executor.js';
import { TransportError, type CredentialSource, type Upstream, type UpstreamRequest, type UpstreamResponse } from '../http/types.js';
import type { VideoVendor } from './types.js';

/**
 * Sends what adapters build, adding each upstream's credential headers (minted tokens etc.).
 * Credential sources are created once per upstream and cache their tokens themselves.
 */
export class VendorClient {
  private readonly creds = new Map<string, CredentialSource | null>();

  constructor(readonly executor: Executor) {}

  async send(up: Upstream, vendor: VideoVendor, req: UpstreamRequest, signal?: AbortSignal): Promise<UpstreamResponse> {
    return this.executor.send(await this.authorize(up, vendor, req), up.timeoutMs, signal, up);
  }

  async stream(up: Upstream, vendor: VideoVendor, req: UpstreamRequest, signal?: AbortSignal): Promise<StreamResponse> {
    return this.executor.stream(await this.authorize(up, vendor, req), up.timeoutMs, signal, up);
  }

  async authorize(up: Upstream, vendor: VideoVendor, req: UpstreamRequest): Promise<UpstreamRequest> {
    let source = this.creds.get(up.name);
    if (source === undefined) {
      source = vendor.credentials ? vendor.credentials(up, this.executor) : null;
      this.creds.set(up.name, source);
    }
    if (!source) return req;
    let headers: Record<string, string>;
    try {
      headers = await source.headers();
    } catch (e) {
      // Credentials that cannot be minted make this upstream unusable, not the request invalid:
      // let failover move on to the next candidate.
      throw new TransportError('connect', `credentials for ${up.name}: ${redactorFor(up).text((e as Error).message)}`, false);
    }
    // A minted token is a credential too: an upstream echoing it must not leak it.
    for (const v of Object.values(headers)) redactorFor(up).learn(v.replace(/^\S+\s+/, ''));
    return { ...req, headers: { ...req.headers, ...headers } };
  }
}
