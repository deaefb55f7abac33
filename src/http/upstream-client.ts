import { redactorFor } from '../core/redact.js';
import type { Dispatcher } from 'undici';
import type { CallSignal } from './call-signal.js';
import type { Executor, StreamResponse, UpstreamTarget } from './executor.js';
import { TransportError, type CredentialSource, type Upstream, type UpstreamRequest, type UpstreamResponse } from './types.js';

/**
 * What an adapter contributes to authentication, whatever its feature: a credential source for minted
 * tokens (Google OAuth) and a final signing step over the whole request (AWS SigV4). Static keys are
 * already in the headers the adapter built.
 */
export interface UpstreamAuth {
  credentials?(up: Upstream, executor: Executor): CredentialSource;
  sign?(req: UpstreamRequest, up: Upstream): Promise<UpstreamRequest>;
}

/** For callers whose requests carry static keys only (OpenAI-protocol chat). */
export const STATIC_AUTH: UpstreamAuth = {};

/**
 * The one upstream client: applies an upstream's credentials, then its signature, then sends through
 * the executor. Used by video (create, poll, content and its redirect hops), embeddings and chat.
 * Credential sources are created once per upstream and cache their tokens themselves.
 */
export class UpstreamClient {
  private readonly creds = new Map<string, CredentialSource | null>();

  constructor(readonly executor: Executor) {}

  async send(up: Upstream, auth: UpstreamAuth, req: UpstreamRequest, signal?: AbortSignal): Promise<UpstreamResponse> {
    return this.executor.send(await this.authorize(up, auth, req, signal), up.timeoutMs, signal, up);
  }

  sendRaw(up: Upstream, auth: UpstreamAuth, req: UpstreamRequest, signal?: CallSignal) {
    // Static keys (most OpenAI-compatible upstreams) are already in the headers: no authorize step.
    if (!auth.credentials && !auth.sign) return this.executor.sendRaw(req, up.timeoutMs, signal, up);
    return this.authorize(up, auth, req, signal).then((authorized) => this.executor.sendRaw(authorized, up.timeoutMs, signal, up));
  }

  async stream(up: Upstream, auth: UpstreamAuth, req: UpstreamRequest, signal?: AbortSignal): Promise<StreamResponse> {
    return this.executor.stream(await this.authorize(up, auth, req, signal), up.timeoutMs, signal, up);
  }

  /** Sends a request that is already authorised (a redirect hop, whose headers were decided by the caller). */
  async follow(req: UpstreamRequest, timeoutMs: number, signal: AbortSignal | undefined, target: UpstreamTarget, via?: Dispatcher): Promise<StreamResponse> {
    return this.executor.stream(req, timeoutMs, signal, target, via);
  }

  /**
   * Credentials first, then the signature (it must cover the final headers). `signal` is the call's:
   * a call cancelled while its token is minted ends as cancelled (not as a failure of the upstream).
   */
  async authorize(up: Upstream, auth: UpstreamAuth, req: UpstreamRequest, signal?: CallSignal): Promise<UpstreamRequest> {
    let source = this.creds.get(up.name);
    if (source === undefined) {
      source = auth.credentials ? auth.credentials(up, this.executor) : null;
      this.creds.set(up.name, source);
    }
    let out = req;
    if (source) {
      let headers: Record<string, string>;
      try {
        headers = await source.headers(signal);
      } catch (e) {
        if (e instanceof TransportError && e.reason === 'aborted') throw e;
        // Credentials that cannot be minted make this upstream unusable, not the request invalid:
        // let failover move on to the next candidate.
        throw new CredentialError(`credentials for ${up.name}: ${redactorFor(up).text((e as Error).message)}`);
      }
      // A minted token is a credential too: an upstream echoing it must not leak it.
      for (const v of Object.values(headers)) redactorFor(up).learn(v.replace(/^\S+\s+/, ''));
      out = { ...out, headers: { ...out.headers, ...headers } };
    }
    if (auth.sign) {
      try {
        out = await auth.sign(out, up);
      } catch (e) {
        throw new CredentialError(`signing for ${up.name}: ${redactorFor(up).text((e as Error).message)}`);
      }
    }
    return out;
  }
}

/** This upstream's credentials could not be applied: a connect-class failure, worth the next upstream. */
export class CredentialError extends TransportError {
  constructor(message: string) {
    super('connect', message, false);
  }
}
