import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNote } from '../components/error-note';
import { useLoad } from '../components/use-load';
import type { Account, Upstream } from '../types';

const FAMILIES = ['video', 'embeddings', 'chat'] as const;

/** Which upstreams serve the account, and its rate limits: PATCH /admin/accounts/{name}. */
export function AccountSettings({ account, onSaved }: { account: Account; onSaved: () => void }) {
  const upstreams = useLoad(() => api<{ data: Upstream[] }>('GET', '/admin/upstreams'), []);
  const [all, setAll] = useState(account.upstreams === 'all');
  const [chosen, setChosen] = useState<string[]>(account.upstreams === 'all' ? [] : account.upstreams);
  const [limits, setLimits] = useState<Record<string, { rpm: string; tpm: string }>>(
    Object.fromEntries(FAMILIES.map((f) => [f, { rpm: String(account.limits[f]?.rpm ?? ''), tpm: String(account.limits[f]?.tpm ?? '') }])),
  );
  const [error, setError] = useState<unknown>();
  const [saved, setSaved] = useState('');
  const save = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setSaved('');
    const body: { upstreams: string[] | null; limits: Record<string, { rpm?: number; tpm?: number }> } = { upstreams: all ? null : chosen, limits: {} };
    for (const f of FAMILIES) {
      const q: { rpm?: number; tpm?: number } = {};
      if (limits[f]!.rpm !== '') q.rpm = Number(limits[f]!.rpm);
      if (limits[f]!.tpm !== '') q.tpm = Number(limits[f]!.tpm);
      if (Object.keys(q).length) body.limits[f] = q;
    }
    try {
      await api('PATCH', `/admin/accounts/${encodeURIComponent(account.name)}`, body);
      setSaved('Saved.');
      onSaved();
    } catch (err) {
      setError(err);
    }
  };
  const toggle = (name: string) => setChosen(chosen.includes(name) ? chosen.filter((n) => n !== name) : [...chosen, name]);
  return (
    <form onSubmit={save} aria-labelledby="settings-title">
      <h2 id="settings-title">Upstreams and limits</h2>
      <fieldset>
        <legend>Upstreams that serve this account</legend>
        <label class="check">
          <input type="checkbox" checked={all} onChange={(e) => setAll(e.currentTarget.checked)} /> All upstreams
        </label>
        {!all &&
          (upstreams.data?.data ?? []).map((u) => (
            <label class="check" key={u.name}>
              <input type="checkbox" checked={chosen.includes(u.name)} onChange={() => toggle(u.name)} /> {u.name} <span class="muted">({u.vendor})</span>
            </label>
          ))}
      </fieldset>
      <fieldset>
        <legend>Rate limits (empty: none)</legend>
        <div class="limits">
          {FAMILIES.map((f) => (
            <div key={f} class="limit-row">
              <span>{f}</span>
              <label>
                requests/min{' '}
                <input type="number" min={0} value={limits[f]!.rpm} onInput={(e) => setLimits({ ...limits, [f]: { ...limits[f]!, rpm: e.currentTarget.value } })} />
              </label>
              <label>
                tokens/min{' '}
                <input type="number" min={0} value={limits[f]!.tpm} onInput={(e) => setLimits({ ...limits, [f]: { ...limits[f]!, tpm: e.currentTarget.value } })} />
              </label>
            </div>
          ))}
        </div>
      </fieldset>
      <button type="submit">Save upstreams and limits</button>
      <span class="muted" aria-live="polite">
        {' '}
        {saved}
      </span>
      <ErrorNote error={error || upstreams.error} />
    </form>
  );
}
