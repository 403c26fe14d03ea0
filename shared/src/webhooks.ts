import { z } from 'zod';
import { ProjectId } from './project.ts';
import { Cursor, Limit, NextCursor } from './query.ts';
import { Timestamp } from './time.ts';

// Webhooks (contract 5.13): results flow out as they happen, delivered by the Standard Webhooks
// specification. Payloads carry ids, not contents: a receiver reads what it needs.

/** The events a webhook may subscribe to; `*` subscribes to all of them. */
export const WEBHOOK_EVENT_TYPES = [
  'feedback.created',
  'annotation_queue.item.progress',
  'annotation_queue.completed',
  'annotation_queue.items.added',
] as const;
export const WebhookEventType = z.enum(WEBHOOK_EVENT_TYPES);
export type WebhookEventType = z.infer<typeof WebhookEventType>;
/** Every type a delivery can carry: the subscribed ones and the test event sent on demand. */
export type DeliveredEventType = WebhookEventType | 'webhook.test';

/** At most this many feedback records in one `feedback.created` event; a larger write sends several. */
export const FEEDBACK_CREATED_MAX_RECORDS = 1000;

export const WebhookSubscription = z.union([WebhookEventType, z.literal('*')]);
export type WebhookSubscription = z.infer<typeof WebhookSubscription>;

const WebhookId = z.string().min(1).max(128).meta({ description: 'webhook id' });
const WebhookUrl = z.string().min(1).max(2048).meta({
  description: 'https:// (http:// only when the server sets LOUPE_WEBHOOK_ALLOW_HTTP=true); its host must not be or resolve to a private address',
  example: 'https://hooks.example.com/loupe',
});
const WebhookEvents = z
  .array(WebhookSubscription)
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length + 1)
  .meta({ description: 'event types to receive, or "*" for all' });
const Description = z.string().max(1024);

export const Webhook = z
  .strictObject({
    id: z.string(),
    project_id: z.string(),
    url: z.string(),
    events: z.array(WebhookSubscription),
    description: z.string().nullable(),
    enabled: z.boolean(),
    disabled_reason: z.string().nullable().meta({ description: 'why the server disabled it (410, five days of failures); null otherwise' }),
    created_by: z.string(),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: 'Webhook' });
export type Webhook = z.infer<typeof Webhook>;

/** A signing secret as Standard Webhooks libraries take it: `whsec_` and base64. */
const Secret = z.string().meta({ description: 'whsec_<base64>: shown once; verify deliveries with it', example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' });

export const WebhookCreateReq = z.strictObject({
  project_id: ProjectId,
  url: WebhookUrl,
  events: WebhookEvents,
  description: Description.nullable().optional(),
});
export type WebhookCreateReq = z.infer<typeof WebhookCreateReq>;
export const WebhookCreateRes = z.strictObject({ webhook: Webhook, secret: Secret });

export const WebhookQueryReq = z.strictObject({ project_id: ProjectId });
export const WebhookQueryRes = z.strictObject({ webhooks: z.array(Webhook) });

export const WebhookRef = z.strictObject({ id: WebhookId, project_id: ProjectId });
export type WebhookRef = z.infer<typeof WebhookRef>;
export const WebhookRes = z.strictObject({ webhook: Webhook });

export const WebhookUpdateReq = z.strictObject({
  id: WebhookId,
  project_id: ProjectId,
  url: WebhookUrl.optional(),
  events: WebhookEvents.optional(),
  description: Description.nullable().optional(),
  enabled: z.boolean().pipe(z.boolean()).optional().meta({ description: 'true enables it again (and clears disabled_reason)' }),
});
export type WebhookUpdateReq = z.infer<typeof WebhookUpdateReq>;

export const WebhookRotateSecretRes = z.strictObject({
  secret: Secret,
  previous_secret_expires_at: Timestamp.meta({ description: 'until then deliveries carry a signature by the old secret too' }),
});

export const DELIVERY_STATES = ['pending', 'delivered', 'failed'] as const;
export const DeliveryState = z.enum(DELIVERY_STATES);

export const WebhookDelivery = z
  .strictObject({
    id: z.string(),
    event_id: z.string().meta({ description: 'the webhook-id header: the same on every attempt' }),
    type: z.string(),
    state: DeliveryState,
    attempts: z.int(),
    last_status: z.int().nullable().meta({ description: "the receiver's HTTP status at the last attempt; null when none came" }),
    last_error: z.string().nullable(),
    next_attempt_at: Timestamp.nullable(),
    created_at: Timestamp,
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDelivery = z.infer<typeof WebhookDelivery>;

export const WebhookTestRes = z.strictObject({ delivery: WebhookDelivery });

export const WebhookDeliveriesQueryReq = z.strictObject({
  id: WebhookId,
  project_id: ProjectId,
  state: DeliveryState.optional(),
  limit: Limit.optional(),
  cursor: Cursor.optional(),
});
export type WebhookDeliveriesQueryReq = z.infer<typeof WebhookDeliveriesQueryReq>;
export const WebhookDeliveriesQueryRes = z.strictObject({ deliveries: z.array(WebhookDelivery), next_cursor: NextCursor });

export const WebhookDeliveryRetryReq = z.strictObject({
  id: WebhookId,
  delivery_id: z.string().min(1).max(128),
  project_id: ProjectId,
});
export type WebhookDeliveryRetryReq = z.infer<typeof WebhookDeliveryRetryReq>;
export const WebhookDeliveryRes = z.strictObject({ delivery: WebhookDelivery });

// ---- what a receiver gets: the body `{type, timestamp, data}` ----

export type FeedbackCreatedData = {
  project_id: string;
  feedback: { id: string; feedback_type: string; svc_ref: string; call_ref: string | null; queue_id: string | null; svc_user_id: string }[];
};
export type ItemProgressData = {
  project_id: string;
  queue_id: string;
  item_id: string;
  call_id: string;
  annotator_user_id: string;
  annotation_state: 'in_progress' | 'completed' | 'skipped';
};
export type QueueCompletedData = { project_id: string; queue_id: string; total_items: number };
export type ItemsAddedData = { project_id: string; queue_id: string; item_ids: string[]; rule_id: string | null };
export type WebhookTestData = { project_id: string; webhook_id: string };
