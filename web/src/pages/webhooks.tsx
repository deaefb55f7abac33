import { useState } from 'preact/hooks';
import { api } from '../api';
import { CopyButton } from '../components/copy-button';
import { ErrorNote } from '../components/error-note';
import { Field } from '../components/field';
import { useLoad } from '../components/use-load';
import { text, when } from '../format';
import type { Account } from '../types';
import { TableHead } from '../components/table-head';

interface Endpoint {
  id: string;
  account_id: string;
  url: string;
  events: string[];
  created_at: string;
  disabled_at: string | null;
  secret?: string;
}

interface Deliveries {
  data: { id: number; type: string; state: string; attempts: number; delivered_at: string | null; created_at: string }[];
  attempts: { delivery_id: number; attempt: number; status: number | null; error: string | null; latency_ms: number | null; at: string }[];
}

/** Operator: webhook endpoints (register, disable) and each one's delivery log. */
export function Webhooks() {
  const accounts = useLoad(() => api<{ data: Account[] }>('GET', '/admin/accounts'), []);
  const list = useLoad(() => api<{ data: Endpoint[] }>('GET', '/admin/webhooks'), []);
  const [form, setForm] = useState({ account: '', url: '' });
  const [created, setCreated] = useState<Endpoint>();
  const [open, setOpen] = useState<string>();
  const log = useLoad(() => (open ? api<Deliveries>('GET', `/admin/webhooks/${encodeURIComponent(open)}/deliveries?limit=50`) : Promise.resolve(undefined)), [open]);
  const [error, setError] = useState<unknown>();
  const names = new Map((accounts.data?.data ?? []).map((a) => [a.id, a.name]));

  const register = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      setCreated(await api<Endpoint>('POST', '/admin/webhooks', { account: form.account, url: form.url.trim() }));
      setForm({ ...form, url: '' });
      list.reload();
    } catch (err) {
      setError(err);
    }
  };
  const disable = async (id: string) => {
    try {
      await api('DELETE', `/admin/webhooks/${encodeURIComponent(id)}`);
      list.reload();
    } catch (err) {
      setError(err);
    }
  };

  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      {created?.secret && (
        <div class="secret" role="status">
          <p>Signing secret of the new endpoint. Copy it now: it is not shown again.</p>
          <code class="mono">{created.secret}</code> <CopyButton value={created.secret} label="Copy secret" />
        </div>
      )}
      <div class="table-wrap">
        <table>
          <TableHead caption='Webhook endpoints' columns={['URL', 'Account', 'Events', 'Created', 'State']} />
          <tbody>
            {(list.data?.data ?? []).map((w) => (
              <tr key={w.id}>
                <td class="mono">{w.url}</td>
                <td>{names.get(w.account_id) ?? w.account_id}</td>
                <td>{w.events.join(', ')}</td>
                <td>{when(w.created_at)}</td>
                <td>
                  <button type="button" onClick={() => setOpen(w.id)} aria-label={`Delivery log of ${w.url}`}>
                    Deliveries
                  </button>{' '}
                  {w.disabled_at ? (
                    `disabled ${when(w.disabled_at)}`
                  ) : (
                    <button type="button" class="danger" onClick={() => disable(w.id)} aria-label={`Disable ${w.url}`}>
                      Disable
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {open && log.data && (
        <section aria-labelledby="deliveries-title">
          <h2 id="deliveries-title">Delivery log</h2>
          <div class="table-wrap">
            <table>
              <TableHead caption='Attempts, newest first' columns={['Delivery', 'Attempt', 'Status', 'Error', 'Latency ms', 'When']} />
              <tbody>
                {log.data.attempts.map((a) => (
                  <tr key={`${a.delivery_id}-${a.attempt}`}>
                    <td>{a.delivery_id}</td>
                    <td>{a.attempt}</td>
                    <td>{text(a.status)}</td>
                    <td>{text(a.error)}</td>
                    <td>{text(a.latency_ms)}</td>
                    <td>{when(a.at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {log.data.attempts.length === 0 && <p class="muted">No delivery attempts yet ({log.data.data.length} events queued).</p>}
        </section>
      )}
      <h2>Register an endpoint</h2>
      <form class="inline-form" onSubmit={register}>
        <Field id="wh-account" label="Account">
          <select id="wh-account" required value={form.account} onChange={(e) => setForm({ ...form, account: e.currentTarget.value })}>
            <option value="">choose…</option>
            {(accounts.data?.data ?? []).map((a) => (
              <option key={a.id} value={a.name}>
                {a.name}
              </option>
            ))}
          </select>
        </Field>
        <Field id="wh-url" label="URL" hint="https://… (public addresses only)">
          <input id="wh-url" type="url" required value={form.url} onInput={(e) => setForm({ ...form, url: e.currentTarget.value })} aria-describedby="wh-url-hint" />
        </Field>
        <button type="submit">Register</button>
      </form>
      <ErrorNote error={error || list.error || log.error} />
    </section>
  );
}
