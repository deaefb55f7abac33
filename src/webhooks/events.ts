import { randomUUID } from 'node:crypto';
import type { VideoEventType } from '../store/webhook-types.js';

export const VIDEO_EVENTS: readonly VideoEventType[] = ['video.completed', 'video.failed', 'video.cancelled'];

/**
 * The body of a video event, shaped like OpenAI's webhook events (`{id, object: "event",
 * created_at, type, data: {id}}`): the receiver fetches the job by `data.id` for its details, so
 * the payload carries no prompt, output link or vendor data that could leak or go stale.
 */
export function videoEvent(type: VideoEventType, videoId: string, now: number): { id: string; json: string } {
  const id = `evt_${randomUUID().replace(/-/g, '')}`;
  return { id, json: JSON.stringify({ id, object: 'event', created_at: Math.floor(now / 1000), type, data: { id: videoId } }) };
}

/** The Standard Webhooks message id (`webhook-id`): one per event and target, the same on every retry. */
export function messageId(): string {
  return `msg_${randomUUID().replace(/-/g, '')}`;
}

/**
 * A receiver's URL as parsed (scheme and host case, default port), so that two spellings of one
 * receiver compare equal: endpoints at one URL are one receiver (outbox rows, signing secrets).
 */
export function receiverKey(url: string): string {
  try {
    return new URL(url).href;
  } catch {
    return url;
  }
}
