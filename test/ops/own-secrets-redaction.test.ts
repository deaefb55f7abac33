import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src/config/load.js';
import { buildServices, type Services } from '../../src/services.js';

/**
 * The admin token and the id-sealing secrets are credentials of the gateway itself: a log line that
 * quotes one (an error repeating a request's headers, a config echoed back) is written without it,
 * whether the operator configured it or the gateway generated it into the data dir.
 */
const ADMIN_TOKEN = 'operator-admin-token-Hq27vNc81LpX0zRt';
const OLD_SECRET = 'old-id-secret-Jx94kWm2Qa7Tb5Yd';
const ID_SECRET = 'new-id-secret-Pr38sFv6Gc1Nh0Ue';

const dirs: string[] = [];
const open: Services[] = [];
afterAll(async () => {
  for (const s of open) await s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Builds the services as `serve` does, with a sink that keeps every log line. */
async function gatewayWithLog(extra: Record<string, unknown>) {
  const dir = mkdtempSync(join(tmpdir(), 'gw-own-secrets-'));
  dirs.push(dir);
  const lines: string[] = [];
  const cfg = validateConfig({ database: `sqlite:${join(dir, 'gateway.db')}`, data_dir: dir, log_level: 'info', ...extra }, '(test)');
  const services = await buildServices(cfg, { logSink: { write: (line: string) => lines.push(line) } });
  open.push(services);
  const logged = async (msg: string) => {
    await new Promise<void>((r) => services.logger.flush(() => r()));
    const line = lines.find((l) => l.includes(msg));
    expect(line).toBeDefined();
    return line!;
  };
  return { dir, services, logged };
}

describe('the log redaction and the gateway’s own secrets', () => {
  it('hides the configured admin token and every configured id secret', async () => {
    const { services, logged } = await gatewayWithLog({ admin_token: ADMIN_TOKEN, secret: [OLD_SECRET, ID_SECRET] });
    services.logger.error({ headers: { 'x-admin': ADMIN_TOKEN } }, `admin call refused: Authorization: Bearer ${ADMIN_TOKEN}`);
    services.logger.warn({ detail: `secret=${ID_SECRET}` }, `config echoed: secret ${OLD_SECRET} and ${ID_SECRET}`);
    const admin = await logged('admin call refused');
    expect(admin).not.toContain(ADMIN_TOKEN);
    expect(admin).not.toContain(ADMIN_TOKEN.slice(0, 20));
    const config = await logged('config echoed');
    expect(config).not.toContain(ID_SECRET);
    expect(config).not.toContain(OLD_SECRET);
    expect(config).not.toContain(ID_SECRET.slice(0, 20));
  });

  it('hides the admin token and id secret the gateway generated into the data dir', async () => {
    const { dir, services, logged } = await gatewayWithLog({});
    const token = readFileSync(join(dir, 'admin-token'), 'utf8').trim();
    const secret = readFileSync(join(dir, 'secret'), 'utf8').trim();
    services.logger.error(`generated values quoted: token ${token} secret ${secret}`);
    const line = await logged('generated values quoted');
    expect(line).not.toContain(token);
    expect(line).not.toContain(secret);
  });
});
