import { z } from 'zod';
import { ProjectId } from './project.ts';
import { ClientId, FilterString, filterValues, Limit, Cursor, NextCursor, Offset } from './query.ts';
import { Timestamp } from './time.ts';

export const ANNOTATION_STATES = ['unstarted', 'in_progress', 'completed', 'skipped'] as const;
export const AnnotationState = z.enum(ANNOTATION_STATES);
export type AnnotationState = z.infer<typeof AnnotationState>;

/** The states a progress update may set. */
export const PROGRESS_STATES = ['in_progress', 'completed', 'skipped'] as const;
export const ProgressState = z.enum(PROGRESS_STATES);
export type ProgressState = z.infer<typeof ProgressState>;

// Path ids are plain strings: one that names nothing is a 404, not a schema error.
const QueueId = z.string().min(1).max(128).meta({ description: 'queue id' });
const ItemId = z.string().min(1).max(128).meta({ description: 'item id' });

// ---- queues ----

/** Who may work a queue (contract 5.11): anyone who may annotate in the project, or only its assignees. */
export const QUEUE_ACCESS = ['open', 'assigned'] as const;
export const QueueAccess = z.enum(QUEUE_ACCESS).meta({ description: '`open`: anyone who may annotate in the project; `assigned`: only the assignees' });
export type QueueAccess = z.infer<typeof QueueAccess>;

/** At most this many assignees per queue. */
export const MAX_ASSIGNEES = 1000;
const UserId = z.string().min(1).max(128);
const Assignees = z
  .array(UserId)
  .max(MAX_ASSIGNEES)
  .meta({ description: `user ids (at most ${MAX_ASSIGNEES}), each an admin, member or annotator of the project's entity; repeats count once` });
const OverlapCoverage = z
  .number()
  .gt(0)
  .max(1)
  .meta({ description: 'the share of items (a stable hash of the item id) that need annotations_per_item annotators; every other item needs one' });

export const AnnotationQueue = z
  .strictObject({
    id: z.string(),
    project_id: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    scorer_refs: z.array(z.string()),
    annotations_per_item: z.int(),
    lease_seconds: z.int(),
    access: QueueAccess,
    assignees: z.array(z.string()).meta({ description: 'user ids, in code-unit order' }),
    overlap_coverage: z.number(),
    created_at: Timestamp,
    created_by: z.string(),
    updated_at: Timestamp,
    deleted_at: Timestamp.nullable(),
  })
  .meta({ id: 'AnnotationQueue' });
export type AnnotationQueue = z.infer<typeof AnnotationQueue>;

const QueueName = z.string().trim().min(1).max(256);
const AnnotationsPerItem = z.int().min(1).max(100);
const LeaseSeconds = z.int().min(10).max(86_400);

export const AnnotationQueueCreateReq = z.strictObject({
  project_id: ProjectId,
  name: QueueName,
  description: z.string().max(4096).nullable().optional(),
  scorer_refs: z.array(z.string()).max(100).optional(),
  annotations_per_item: AnnotationsPerItem.optional(),
  lease_seconds: LeaseSeconds.optional(),
  access: QueueAccess.optional().meta({ description: 'default open' }),
  assignees: Assignees.optional(),
  overlap_coverage: OverlapCoverage.optional().meta({ description: 'default 1' }),
});
export type AnnotationQueueCreateReq = z.infer<typeof AnnotationQueueCreateReq>;
export const AnnotationQueueCreateRes = z.strictObject({ id: z.string() });

export const AnnotationQueueQueryReq = z.strictObject({
  project_id: ProjectId,
  name: z.string().max(256).optional().meta({ description: 'case-insensitive substring' }),
  limit: Limit.optional(),
  offset: Offset.optional(),
});
export type AnnotationQueueQueryReq = z.infer<typeof AnnotationQueueQueryReq>;
export const AnnotationQueueQueryRes = z.strictObject({ queues: z.array(AnnotationQueue) });

export const AnnotationQueueReadReq = z.strictObject({ queue_id: QueueId, project_id: ProjectId });
export const AnnotationQueueRes = z.strictObject({ queue: AnnotationQueue });

export const AnnotationQueueUpdateReq = z.strictObject({
  queue_id: QueueId,
  project_id: ProjectId,
  name: QueueName.optional(),
  description: z.string().max(4096).nullable().optional(),
  scorer_refs: z.array(z.string()).max(100).optional(),
  annotations_per_item: AnnotationsPerItem.optional(),
  lease_seconds: LeaseSeconds.optional(),
  access: QueueAccess.optional(),
  assignees: Assignees.optional().meta({ description: 'the new list; a user left out is no longer an assignee: their live leases are released' }),
  overlap_coverage: OverlapCoverage.optional(),
});
export type AnnotationQueueUpdateReq = z.infer<typeof AnnotationQueueUpdateReq>;

// ---- items ----

export const AnnotationQueueItem = z
  .strictObject({
    id: z.string(),
    project_id: z.string(),
    queue_id: z.string(),
    call_id: z.string(),
    call_started_at: Timestamp,
    call_ended_at: Timestamp.nullable(),
    call_op_name: z.string(),
    call_trace_id: z.string(),
    display_fields: z.array(z.string()),
    annotation_state: AnnotationState,
    annotator_user_id: z.string().nullable(),
    added_by: z.string(),
    created_at: Timestamp,
    created_by: z.string(),
    updated_at: Timestamp,
    deleted_at: Timestamp.nullable(),
    position_in_queue: z.int().nullable(),
    assigned_user_id: z.string().nullable().meta({ description: 'the one user who may claim the item, or null (contract 5.11)' }),
    annotations_required: z
      .int()
      .meta({ description: "the item's quota: the queue's annotations_per_item for the share overlap_coverage of items, else 1" }),
  })
  .meta({ id: 'AnnotationQueueItem' });
export type AnnotationQueueItem = z.infer<typeof AnnotationQueueItem>;

export const AnnotationQueueItemsAddReq = z.strictObject({
  queue_id: QueueId,
  project_id: ProjectId,
  call_ids: z.array(ClientId).min(1),
  display_fields: z.array(z.string().max(1024)).max(256).optional(),
});
export type AnnotationQueueItemsAddReq = z.infer<typeof AnnotationQueueItemsAddReq>;
export const AnnotationQueueItemsAddRes = z.strictObject({
  added_count: z.int(),
  duplicates: z.array(z.string()).meta({ description: 'requested call ids already in the queue (or repeated in the request)' }),
  missing_call_ids: z.array(z.string()),
});

export const ITEM_SORT_FIELDS = ['created_at', 'updated_at', 'call_started_at', 'call_op_name'] as const;
export const ItemSort = z.strictObject({ field: z.enum(ITEM_SORT_FIELDS), direction: z.enum(['asc', 'desc']) });
export type ItemSort = z.infer<typeof ItemSort>;

export const AnnotationQueueItemsQueryReq = z.strictObject({
  queue_id: QueueId,
  project_id: ProjectId,
  filter: z
    .strictObject({
      call_ids: filterValues(FilterString).optional(),
      call_op_names: filterValues(FilterString).optional(),
      call_trace_ids: filterValues(FilterString).optional(),
      added_by: filterValues(FilterString).optional(),
      annotation_states: filterValues(AnnotationState).optional(),
    })
    .optional(),
  sort_by: z.array(ItemSort).max(4).optional(),
  limit: Limit.optional(),
  offset: Offset.optional(),
  cursor: Cursor.optional(),
  include_position: z.boolean().optional(),
});
export type AnnotationQueueItemsQueryReq = z.infer<typeof AnnotationQueueItemsQueryReq>;
export const AnnotationQueueItemsQueryRes = z.strictObject({ items: z.array(AnnotationQueueItem) , next_cursor: NextCursor });

export const AnnotationQueueItemRef = z.strictObject({ queue_id: QueueId, item_id: ItemId, project_id: ProjectId });
export const AnnotationQueueItemRes = z.strictObject({ item: AnnotationQueueItem });

/** The body of the interface document's progress operation, plus its path parameters. */
export const AnnotationQueueItemProgressReq = z.strictObject({
  queue_id: QueueId,
  item_id: ItemId,
  project_id: ProjectId,
  annotation_state: ProgressState,
});
export type AnnotationQueueItemProgressReq = z.infer<typeof AnnotationQueueItemProgressReq>;

/** The states that finish an annotator's work on an item. */
export const FINISHED_STATES = ['completed', 'skipped'] as const;

/**
 * The caller's own finished items of a queue, the latest finished first (an addition beyond the
 * contract: what an annotator's "previous item" walks back through, across sessions).
 */
export const AnnotationQueueFinishedReq = z.strictObject({
  queue_id: QueueId,
  project_id: ProjectId,
  annotation_states: z.array(z.enum(FINISHED_STATES)).min(1).max(FINISHED_STATES.length).optional().meta({ description: 'default both' }),
  limit: Limit.optional(),
  cursor: Cursor.optional(),
});
export type AnnotationQueueFinishedReq = z.infer<typeof AnnotationQueueFinishedReq>;
export const FinishedItem = z
  .strictObject({
    item: AnnotationQueueItem,
    annotation_state: z.enum(FINISHED_STATES).meta({ description: "the caller's own state on the item (the item's shown state may be another annotator's)" }),
    finished_at: Timestamp.meta({ description: 'when the caller finished it' }),
  })
  .meta({ id: 'FinishedItem' });
export type FinishedItem = z.infer<typeof FinishedItem>;
export const AnnotationQueueFinishedRes = z.strictObject({
  finished: z.array(FinishedItem),
  next_cursor: NextCursor,
});

/** At most this many item ids per assignment. */
export const ASSIGN_MAX_ITEM_IDS = 10_000;

export const AnnotationQueueItemsAssignReq = z.strictObject({
  queue_id: QueueId,
  project_id: ProjectId,
  item_ids: z.array(ItemId).min(1).max(ASSIGN_MAX_ITEM_IDS).meta({ description: `at most ${ASSIGN_MAX_ITEM_IDS.toLocaleString('en')}` }),
  user_id: UserId.nullable().meta({ description: 'who alone may claim these items; null unassigns them' }),
});
export type AnnotationQueueItemsAssignReq = z.infer<typeof AnnotationQueueItemsAssignReq>;
export const AnnotationQueueItemsAssignRes = z.strictObject({
  assigned_count: z.int().meta({ description: 'live items of the queue among those named, now assigned as asked' }),
  missing_item_ids: z.array(z.string()).meta({ description: 'named ids that are no live item of the queue' }),
});

export const AnnotationQueueClaimReq = z.strictObject({ queue_id: QueueId, project_id: ProjectId });
export const AnnotationQueueClaimRes = z.strictObject({ item: AnnotationQueueItem.nullable() });

/** At most this many item ids per annotation-count request: a page of the queue page fits many times over. */
export const ITEM_ANNOTATIONS_MAX_IDS = 1000;

export const AnnotationQueueItemAnnotationsReq = z
  .strictObject({
    queue_id: QueueId,
    project_id: ProjectId,
    item_ids: z.array(ItemId).min(1).max(ITEM_ANNOTATIONS_MAX_IDS).meta({ description: `Items of the queue (at most ${ITEM_ANNOTATIONS_MAX_IDS}; repeats are answered once)` }),
  })
  .meta({ id: 'AnnotationQueueItemAnnotationsReq' });
export type AnnotationQueueItemAnnotationsReq = z.infer<typeof AnnotationQueueItemAnnotationsReq>;

/**
 * How far an item is from done ("1 of 2"): its annotators who completed or skipped it (in an
 * assigned queue, its assignees), against its quota `annotations_required` (contract 5.11).
 */
export const AnnotationQueueItemAnnotations = z
  .strictObject({ item_id: z.string(), annotations_done: z.int(), annotations_required: z.int() })
  .meta({ id: 'AnnotationQueueItemAnnotations' });
export type AnnotationQueueItemAnnotations = z.infer<typeof AnnotationQueueItemAnnotations>;
export const AnnotationQueueItemAnnotationsRes = z.strictObject({
  items: z.array(AnnotationQueueItemAnnotations).meta({ description: 'The live items of the queue among those asked, in the order asked; any other id is left out' }),
});

// ---- stats ----

export const AnnotationQueueStatsReq = z.strictObject({ project_id: ProjectId, queue_ids: z.array(QueueId).min(1).max(1000) });
const StateCounts = z.strictObject({ unstarted: z.int(), in_progress: z.int(), completed: z.int(), skipped: z.int() });
export const AnnotationQueueStats = z.strictObject({
  queue_id: z.string(),
  total_items: z.int(),
  completed_items: z.int(),
  by_state: StateCounts,
  by_annotator: z.array(
    z.strictObject({ annotator_user_id: z.string(), in_progress: z.int(), completed: z.int(), skipped: z.int() }),
  ),
  /** Items whose completed or skipped annotators number at least the item's annotations_required (5.2, 5.11). */
  done_items: z.int(),
  by_assignee: z
    .array(
      z.strictObject({
        user_id: z.string(),
        assigned_items: z.int().meta({ description: 'live items assigned to the user alone (items/assign)' }),
        done: z.int().meta({ description: 'live items the user completed or skipped' }),
        in_progress: z.int().meta({ description: 'live items the user holds with a live lease' }),
        remaining: z.int().meta({ description: 'live items open to the user (assigned to them or to nobody), not finished by them, still short of their quota' }),
      }),
    )
    .meta({ description: "the queue's assignees and the users items are assigned to, by user id (5.11)" }),
});
export type AnnotationQueueStats = z.infer<typeof AnnotationQueueStats>;
export const AnnotationQueueStatsRes = z.strictObject({ stats: z.array(AnnotationQueueStats) });

// ---- the caller's queues (contract 5.11) ----

export const AnnotationQueueMineReq = z.strictObject({
  project_id: ProjectId.optional().meta({ description: "only this project's queues; default every project of the caller's entities" }),
});
export type AnnotationQueueMineReq = z.infer<typeof AnnotationQueueMineReq>;
export const MyQueue = z
  .strictObject({
    project_id: z.string(),
    queue: AnnotationQueue,
    remaining_for_me: z.int().meta({ description: 'items open to the caller, not finished by them and still short of their quota' }),
    done_by_me: z.int().meta({ description: 'items the caller completed or skipped' }),
  })
  .meta({ id: 'MyQueue' });
export type MyQueue = z.infer<typeof MyQueue>;
export const AnnotationQueueMineRes = z.strictObject({
  queues: z.array(MyQueue).meta({ description: 'every live queue the caller may claim from, by project, then newest first' }),
});
