import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { errors } from '../core/errors.js';

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * A guard that lets only `Authorization: Bearer <admin token>` through (constant-time compare of
 * digests); with no admin token configured it lets nobody through.
 */
export function adminTokenGuard(adminToken: string | undefined): (req: FastifyRequest) => void {
  const want = adminToken ? digest(adminToken) : undefined;
  return (req) => {
    const h = req.headers.authorization;
    const m = typeof h === 'string' ? /^Bearer ([\x21-\x7e]+)$/.exec(h) : null;
    if (!want || !m || !timingSafeEqual(digest(m[1]!), want)) throw errors.unauthenticated('This endpoint needs the admin token.');
  };
}
