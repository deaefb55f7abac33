import 'fastify';
import type { Account, ApiKeyRecord } from '../store/types.js';

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
  }
  interface FastifyContextConfig {
    /** The route accepts signed links (expires + signature) in place of a bearer key. */
    signedLinks?: boolean;
  }
}
