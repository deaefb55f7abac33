import type { Agent } from 'node:http';
import { sendFuzz } from './requests.js';

interface Entry {
  id: number;
  kind: string;
  amount_micros: number;
  ref: string;
}

/**
 * The money invariants after a fuzzing run, read through the admin API: every account's balance is
 * the sum of its ledger, a hold is released at most once and captured at most once (a capture only
 * after its release), a charge's ref is never used twice, and, once no job is processing any more,
 * every hold has been released. Answers what is wrong (nothing: an empty list).
 */
export async function ledgerViolations(base: string, agent: Agent, adminToken: string, settleMs: number): Promise<string[]> {
  const headers = { authorization: `Bearer ${adminToken}` };
  const get = async (path: string) => {
    const r = await sendFuzz(base, { method: 'GET', path, headers }, agent, 30_000);
    if (r.status !== 200) throw new Error(`GET ${path}: ${r.status} ${r.body.slice(0, 300)}`);
    return JSON.parse(r.body);
  };
  // Jobs still running hold money they will release: wait for them, up to settleMs.
  let settled = false;
  for (const start = Date.now(); ; await new Promise((r) => setTimeout(r, 1_000))) {
    settled = (await get('/admin/jobs?status=processing&limit=1')).data.length === 0;
    if (settled || Date.now() - start >= settleMs) break;
  }
  const out: string[] = [];
  for (const account of (await get('/admin/accounts')).data as { name: string; balance_micros: number }[]) {
    const entries: Entry[] = [];
    for (let before = ''; ; ) {
      const page = (await get(`/admin/accounts/${encodeURIComponent(account.name)}/ledger?limit=1000${before}`)).data as Entry[];
      entries.push(...page);
      if (page.length < 1000) break;
      before = `&before=${page[page.length - 1]!.id}`;
    }
    const sum = entries.reduce((s, e) => s + e.amount_micros, 0);
    const who = `account ${JSON.stringify(account.name).slice(0, 60)}`;
    if (sum !== account.balance_micros) out.push(`${who}: balance ${account.balance_micros} micros, ledger sums to ${sum}`);
    const byRef = new Map<string, Entry[]>();
    for (const e of [...entries].sort((a, b) => a.id - b.id)) byRef.set(`${e.kind === 'charge' ? 'charge:' : ''}${e.ref}`, [...(byRef.get(`${e.kind === 'charge' ? 'charge:' : ''}${e.ref}`) ?? []), e]);
    for (const [ref, es] of byRef) {
      const kinds = es.map((e) => e.kind);
      const count = (k: string) => kinds.filter((x) => x === k).length;
      if (ref.startsWith('charge:') && es.length > 1) out.push(`${who}: ${es.length} charges with ref ${ref.slice(7)}`);
      if (count('hold') === 0) continue;
      if (count('hold') > 1 || count('release') > 1 || count('capture') > 1) out.push(`${who}: hold ${ref}: ${kinds.join(', ')}`);
      else if (count('capture') === 1 && kinds.indexOf('capture') < kinds.indexOf('release')) out.push(`${who}: hold ${ref} captured before its release: ${kinds.join(', ')}`);
      else if (count('capture') === 1 && count('release') === 0) out.push(`${who}: hold ${ref} captured, never released: ${kinds.join(', ')}`);
      else if (settled && count('release') === 0) out.push(`${who}: hold ${ref} still held with no job processing`);
    }
  }
  return out;
}
