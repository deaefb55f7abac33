import { useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNote } from '../components/error-note';
import type { Session } from '../types';

/**
 * Sign in with the admin token (operator) or an API key (its holder). The token goes in a POST body
 * only, never in the address; the answer sets the session cookie and the field is cleared.
 */
export function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const s = await api<Session>('POST', '/console/session', { token: token.trim() }, { quiet401: true });
      setToken('');
      onSignedIn(s);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="sign-in">
      <h1>Gateway console</h1>
      <form onSubmit={submit}>
        <div class="field">
          <label for="token">Admin token or API key</label>
          <input id="token" name="token" type="password" autocomplete="off" spellcheck={false} required value={token} onInput={(e) => setToken(e.currentTarget.value)} aria-describedby="token-hint" />
          <small id="token-hint" class="muted">
            The admin token opens the operator view; an API key (sk-gw-…) shows that key's own account.
          </small>
        </div>
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <ErrorNote error={error} />
      </form>
    </main>
  );
}
