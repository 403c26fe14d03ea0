import { z } from 'zod';
import { ProjectId } from './project.ts';
import { Timestamp } from './time.ts';

// Live events of one queue (contract 5.8), or of every queue of a project (an addition beyond the
// contract): ids only, so a client refetches what it shows and no event can reveal more than the
// reads it triggers.

export const QUEUE_EVENT_TYPES = ['progress', 'items_added', 'items_deleted', 'queue_updated'] as const;
export const QueueEventType = z.enum(QUEUE_EVENT_TYPES);
export type QueueEventType = z.infer<typeof QueueEventType>;

export const AnnotationQueueEventsReq = z.strictObject({
  project_id: ProjectId,
  queue_id: z.string().min(1).max(128),
});
export type AnnotationQueueEventsReq = z.infer<typeof AnnotationQueueEventsReq>;

/** The events of every queue of the project, including a queue's creation and deletion (`queue_updated`). */
export const AnnotationProjectEventsReq = z.strictObject({
  project_id: ProjectId,
});
export type AnnotationProjectEventsReq = z.infer<typeof AnnotationProjectEventsReq>;

/** One change of a queue: which kind, the item it concerns when there is one, and when it was written. */
export const AnnotationQueueEvent = z.strictObject({
  type: QueueEventType,
  queue_id: z.string(),
  item_id: z.string().optional(),
  at: Timestamp,
});
export type AnnotationQueueEvent = z.infer<typeof AnnotationQueueEvent>;
