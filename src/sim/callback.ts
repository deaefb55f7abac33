/**
 * Simulated vendor callbacks: when a task finishes, POST its JSON to the URL the client registered,
 * as Seedance (`callback_url`) and fal (`fal_webhook`) do. Like the real services, a failed
 * callback is retried a few times, then given up (the client can still poll).
 */
export function callBackWhenReady(
  url: string,
  readyAt: number,
  body: () => unknown,
  attempts = 3,
  /** Headers that sign the exact body sent (fal signs its webhooks; each retry is signed anew). */
  sign?: (body: Buffer) => Record<string, string>,
): void {
  const send = async (left: number): Promise<void> => {
    try {
      const bytes = Buffer.from(JSON.stringify(body()), 'utf8');
      const headers = { 'content-type': 'application/json', ...(sign ? sign(bytes) : {}) };
      const res = await fetch(url, { method: 'POST', headers, body: new Uint8Array(bytes), signal: AbortSignal.timeout(5_000) });
      await res.arrayBuffer().catch(() => undefined);
      if (res.status >= 300 && left > 1) setTimeout(() => void send(left - 1), 200).unref();
    } catch {
      if (left > 1) setTimeout(() => void send(left - 1), 200).unref();
    }
  };
  // A little after the task is ready, so a poll made in response sees it finished.
  setTimeout(() => void send(attempts), Math.max(0, readyAt - Date.now()) + 20).unref();
}
