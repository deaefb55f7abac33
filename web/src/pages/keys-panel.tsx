import { useState } from 'preact/hooks';
import { api, query } from '../api';
import { CopyButton } from '../components/copy-button';
import { ErrorNote } from '../components/error-note';
import { Field } from '../components/field';
import { useLoad } from '../components/use-load';
import { text, when } from '../format';
import type { Key, KeyPage } from '../types';
import { TableHead } from '../components/table-head';

const ACTIONS = ['video', 'embeddings', 'chat', 'models'];

const PAGE = 50;

/**
 * An account's keys, newest first in cursor pages (`after` = the last id shown): list, create (the
 * secret is shown once, with a copy button), revoke.
 */
export function KeysPanel({ account }: { account: string }) {
  // The pages walked belong to one account: another account starts from its newest keys.
  const [pages, setPages] = useState<{ account: string; cursors: string[] }>({ account, cursors: [] });
  const cursors = pages.account === account ? pages.cursors : [];
  const setCursors = (next: string[]) => setPages({ account, cursors: next });
  const after = cursors[cursors.length - 1];
  const keys = useLoad(() => api<KeyPage>('GET', `/admin/keys${query({ account, order: 'desc', limit: PAGE, after })}`), [account, after]);
  const [form, setForm] = useState({ name: '', models: '', expires: '', total: '', period: '', periodLimit: '' });
  const [actions, setActions] = useState<string[]>(ACTIONS);
  const [created, setCreated] = useState<Key>();
  const [error, setError] = useState<unknown>();
  const set = (k: keyof typeof form) => (e: Event) => setForm({ ...form, [k]: (e.currentTarget as HTMLInputElement).value });

  const create = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    const models = form.models.split(',').map((m) => m.trim()).filter(Boolean);
    const budget = form.total || form.period ? { total: form.total || null, period: form.period || null, period_limit: form.periodLimit || null } : undefined;
    try {
      const k = await api<Key>('POST', '/admin/keys', {
        account,
        actions,
        ...(form.name ? { name: form.name } : {}),
        ...(models.length ? { models } : {}),
        ...(form.expires ? { expires: form.expires } : {}),
        ...(budget ? { budget } : {}),
      });
      setCreated(k);
      setForm({ name: '', models: '', expires: '', total: '', period: '', periodLimit: '' });
      // The new key is the newest: it heads the first page.
      if (cursors.length > 0) setCursors([]);
      else keys.reload();
    } catch (err) {
      setError(err);
    }
  };
  const revoke = async (k: Key) => {
    if (!confirm(`Revoke ${k.prefix}…? Requests with it stop at once.`)) return;
    try {
      await api('POST', `/admin/keys/${encodeURIComponent(k.id)}/revoke`);
      keys.reload();
    } catch (err) {
      setError(err);
    }
  };

  return (
    <section aria-labelledby="keys-title">
      <h2 id="keys-title">API keys</h2>
      {created?.key && (
        <div class="secret" role="status">
          <p>
            New key <strong>{created.prefix}…</strong>. Copy it now: it is not shown again.
          </p>
          <code id="new-key-secret" class="mono">
            {created.key}
          </code>{' '}
          <CopyButton value={created.key} label="Copy key" />{' '}
          <button type="button" onClick={() => setCreated(undefined)}>
            Done
          </button>
        </div>
      )}
      <div class="table-wrap">
        <table>
          <TableHead caption={`Keys of ${account}, newest first`} columns={['Key', 'Name', 'Actions', 'Models', 'Budget', 'Expires', 'Last used', 'State']} />
          <tbody>
            {(keys.data?.data ?? []).map((k) => (
              <tr key={k.id} data-key={k.id}>
                <td class="mono">{k.prefix}…</td>
                <td>{text(k.name)}</td>
                <td>{k.actions.join(', ')}</td>
                <td>{k.models.join(', ')}</td>
                <td>{k.budget ? [k.budget.total && `total ${k.budget.total}`, k.budget.period && `${k.budget.period_limit}/${k.budget.period}`].filter(Boolean).join(', ') : '—'}</td>
                <td>{when(k.expires_at)}</td>
                <td>{when(k.last_used_at)}</td>
                <td>
                  {k.revoked_at ? (
                    `revoked ${when(k.revoked_at)}`
                  ) : (
                    <button type="button" class="danger" onClick={() => revoke(k)} aria-label={`Revoke key ${k.prefix}`}>
                      Revoke
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <nav class="pager" aria-label="Key pages">
        <button type="button" disabled={cursors.length === 0} onClick={() => setCursors([])}>
          Newest
        </button>
        <button type="button" disabled={cursors.length === 0} onClick={() => setCursors(cursors.slice(0, -1))}>
          Previous page
        </button>
        <button type="button" disabled={!keys.data?.has_more || !keys.data.last_id} onClick={() => setCursors([...cursors, keys.data!.last_id!])}>
          Older keys
        </button>
      </nav>
      <h3>New key</h3>
      <form class="inline-form" onSubmit={create}>
        <Field id="key-name" label="Name">
          <input id="key-name" maxLength={100} value={form.name} onInput={set('name')} />
        </Field>
        <Field id="key-models" label="Models" hint="Comma-separated patterns; empty: all">
          <input id="key-models" value={form.models} onInput={set('models')} placeholder="*" aria-describedby="key-models-hint" />
        </Field>
        <Field id="key-expires" label="Expires in" hint="e.g. 30d, 12h; empty: never">
          <input id="key-expires" value={form.expires} onInput={set('expires')} aria-describedby="key-expires-hint" />
        </Field>
        <Field id="key-total" label="Budget total">
          <input id="key-total" inputMode="decimal" value={form.total} onInput={set('total')} />
        </Field>
        <Field id="key-period" label="Budget period">
          <select id="key-period" value={form.period} onChange={set('period')}>
            <option value="">none</option>
            <option value="day">day</option>
            <option value="month">month</option>
          </select>
        </Field>
        <Field id="key-period-limit" label="Per-period limit">
          <input id="key-period-limit" inputMode="decimal" value={form.periodLimit} onInput={set('periodLimit')} />
        </Field>
        <fieldset class="scopes">
          <legend>Scopes</legend>
          {ACTIONS.map((a) => (
            <label class="check" key={a}>
              <input type="checkbox" checked={actions.includes(a)} onChange={() => setActions(actions.includes(a) ? actions.filter((x) => x !== a) : [...actions, a])} /> {a}
            </label>
          ))}
        </fieldset>
        <button type="submit">Create key</button>
      </form>
      <ErrorNote error={error || keys.error} />
    </section>
  );
}
