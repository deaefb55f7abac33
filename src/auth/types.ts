import 'fastify';
import type { CallSignal } from '../http/call-signal.js';
import type { Account, ApiKeyRecord, KeyAction } from '../store/types.js';

export interface AuthContext {
  account: Account;
  key: ApiKeyRecord;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the auth hook on every /v1 route. */
    auth: AuthContext;
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set instead of `auth` when a content request carries a valid signed link. */
    signedAccountId?: string;
    /** Aborted when the client goes away or the request times out (408): upstream work stops. */
    abortSignal: AbortSignal;
    /**
     * The same abort for upstream calls that take a CallSignal (http/call-signal.ts), without an
     * AbortController per request; it carries the request's answer-memory hold too.
     */
    callSignal: CallSignal;
    /**
     * Marks the point after which the request must run to its end (e.g. a video job holding money
     * exists): the 408 timer no longer fires for it.
     */
    commit(): void;
  }
  interface FastifyContextConfig {
    /** The route accepts signed links (expires + signature) in place of a bearer key. */
    signedLinks?: boolean;
    /**
     * The key action a /v1 route needs: checked with the key, before the body is read or parsed
     * (auth/request-gate.ts), so a key without it gets 403 whatever it sends. `any`: every valid key
     * (a key's own usage). Every /v1 route names one: the gate refuses to register a route without.
     */
    keyAction?: KeyAction | 'any';
  }
}
