import { ApiError } from '../api';

/** An error announced to screen readers (role=alert), in the API's own words. */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const e = error as ApiError;
  const detail = e instanceof ApiError && e.code ? ` (${e.code}${e.param ? `, ${e.param}` : ''})` : '';
  return (
    <p class="error" role="alert">
      {e.message ?? String(error)}
      {detail}
    </p>
  );
}
