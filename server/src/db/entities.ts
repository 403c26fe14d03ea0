import { defineEntity, p } from '@mikro-orm/core';
import type { InferKyselyDB } from '@mikro-orm/sql';

// Every table of the schema, with its columns, keys and indexes: what the code reads and writes
// by, and what test/src/db/entity-schema.test.ts holds against the migrations of both databases
// (a column, key or index the migrations have and an entity lacks, or the other way round, fails
// it). Columns are snake_case (MikroORM's default naming); foreign keys are plain id columns whose
// constraints live in the migrations, as do CHECK constraints and PostgreSQL's collations.

export const User = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: p.text().primary(),
    username: p.text().unique(),
    /** argon2id (auth/passwords.ts); null: the user signs in by other means (a key, single sign-on). */
    passwordHash: p.text().nullable(),
    /** The last sign-in or session activity (kept to the minute). */
    lastSeenAt: p.datetime().nullable(),
    createdAt: p.datetime(),
  },
});

export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: p.text().primary(),
    userId: p.text(),
    /** SHA-256 of the whole key, hex; the key itself is never stored. */
    keyHash: p.text().unique(),
    /** What its owner calls it (keys made by the admin tool have none). */
    name: p.text().nullable(),
    createdAt: p.datetime(),
    revokedAt: p.datetime().nullable(),
  },
  indexes: [{ name: 'api_keys_user_id_idx', properties: ['userId'] }],
});

/** An entity in the contract's sense: the owner of projects that users belong to. */
export const EntityRecord = defineEntity({
  name: 'EntityRecord',
  tableName: 'entities',
  properties: {
    name: p.text().primary(),
    createdAt: p.datetime(),
  },
});

export const Membership = defineEntity({
  name: 'Membership',
  tableName: 'memberships',
  properties: {
    userId: p.text().primary(),
    entity: p.text().primary(),
    role: p.text(),
    createdAt: p.datetime(),
  },
});

export const Project = defineEntity({
  name: 'Project',
  tableName: 'projects',
  properties: {
    /** `<entity>/<project>` */
    id: p.text().primary(),
    entity: p.text(),
    name: p.text(),
    createdAt: p.datetime(),
  },
});

export const Call = defineEntity({
  name: 'Call',
  tableName: 'calls',
  properties: {
    projectId: p.text().primary(),
    id: p.text().primary(),
    traceId: p.text(),
    /** The call this one ran inside; null for a trace's root. Not a foreign key: spans arrive in any order. */
    parentId: p.text().nullable(),
    opName: p.text(),
    startedAt: p.datetime(),
    endedAt: p.datetime().nullable(),
    inputs: p.json<Record<string, unknown>>().nullable(),
    output: p.json<unknown>().nullable(),
    attributes: p.json<Record<string, unknown>>().nullable(),
    exception: p.text().nullable(),
    /** SHA-256 of the canonical JSON of the element the client sent: the idempotency check. */
    requestHash: p.text(),
    createdAt: p.datetime(),
    createdBy: p.text(),
  },
  indexes: [
    { name: 'calls_trace_parent_idx', properties: ['projectId', 'traceId', 'parentId'] },
    { name: 'calls_parent_idx', properties: ['projectId', 'parentId', 'startedAt', 'id'] },
    { name: 'calls_op_name_idx', properties: ['projectId', 'opName', 'startedAt', 'id'] },
    { name: 'calls_exception_idx', properties: ['projectId', 'startedAt', 'id'], where: 'exception is not null' },
    { name: 'calls_started_idx', properties: ['projectId', 'startedAt', 'id'] },
  ],
});

export const AnnotationSpecRecord = defineEntity({
  name: 'AnnotationSpecRecord',
  tableName: 'annotation_specs',
  properties: {
    projectId: p.text().primary(),
    name: p.text().primary(),
    digest: p.text().primary(),
    description: p.text().nullable(),
    fieldSchema: p.json<Record<string, unknown>>(),
    createdAt: p.datetime(),
    createdBy: p.text(),
  },
});

export const AnnotationQueueRecord = defineEntity({
  name: 'AnnotationQueueRecord',
  tableName: 'annotation_queues',
  properties: {
    id: p.text().primary(),
    projectId: p.text(),
    name: p.text(),
    description: p.text().nullable(),
    scorerRefs: p.json<string[]>(),
    annotationsPerItem: p.type('integer'),
    leaseSeconds: p.type('integer'),
    /** `open` or `assigned` (contract 5.11). */
    access: p.text(),
    /** The share of items that need annotationsPerItem annotators (0 < c ≤ 1); see domain/coverage.ts. */
    overlapCoverage: p.type('double'),
    createdAt: p.datetime(),
    createdBy: p.text(),
    updatedAt: p.datetime(),
    deletedAt: p.datetime().nullable(),
  },
  indexes: [{ name: 'annotation_queues_project_idx', properties: ['projectId', 'createdAt'] }],
});

/** A user who may work an `assigned` queue (contract 5.11). */
export const AnnotationQueueAssigneeRecord = defineEntity({
  name: 'AnnotationQueueAssigneeRecord',
  tableName: 'annotation_queue_assignees',
  properties: {
    queueId: p.text().primary(),
    userId: p.text().primary(),
    createdAt: p.datetime(),
  },
  indexes: [{ name: 'annotation_queue_assignees_user_idx', properties: ['userId'] }],
});

/** A secret the server made for itself (see db/server-secret.ts), shared by its processes. */
export const ServerSecret = defineEntity({
  name: 'ServerSecret',
  tableName: 'server_secrets',
  properties: {
    name: p.text().primary(),
    value: p.text(),
    createdAt: p.datetime(),
  },
});

const LIVE = 'deleted_at is null';

/** A call in a queue, with the call's fields the items query sorts and filters by copied in. */
export const AnnotationQueueItemRecord = defineEntity({
  name: 'AnnotationQueueItemRecord',
  tableName: 'annotation_queue_items',
  properties: {
    id: p.text().primary(),
    projectId: p.text(),
    queueId: p.text(),
    callId: p.text(),
    callStartedAt: p.datetime(),
    callEndedAt: p.datetime().nullable(),
    callOpName: p.text(),
    callTraceId: p.text(),
    displayFields: p.json<string[]>(),
    /** The item's shown state, kept by every progress write (contract 5.2). */
    state: p.text(),
    stateAnnotatorUserId: p.text().nullable(),
    stateUpdatedAt: p.datetime().nullable(),
    /** The one user who may claim the item, or null (contract 5.11). */
    assignedUserId: p.text().nullable(),
    /** A stable hash of the id in [0, 1): the item needs the queue's annotations_per_item when below its overlap_coverage (domain/coverage.ts). */
    coveragePoint: p.type('double'),
    addedBy: p.text(),
    /** The queue rule that added the item (contract 5.10); null for items added by hand. */
    ruleId: p.text().nullable(),
    createdAt: p.datetime(),
    createdBy: p.text(),
    updatedAt: p.datetime(),
    deletedAt: p.datetime().nullable(),
  },
  uniques: [{ name: 'annotation_queue_items_call_uq', properties: ['queueId', 'callId'], where: LIVE }],
  indexes: [
    // The deleted items of a call: a rule never adds a call again whose item was deleted.
    { name: 'annotation_queue_items_deleted_call_idx', properties: ['queueId', 'callId'], where: 'deleted_at is not null' },
    { name: 'annotation_queue_items_created_at_idx', properties: ['queueId', 'createdAt', 'id'], where: LIVE },
    { name: 'annotation_queue_items_updated_at_idx', properties: ['queueId', 'updatedAt', 'id'], where: LIVE },
    { name: 'annotation_queue_items_call_started_at_idx', properties: ['queueId', 'callStartedAt', 'id'], where: LIVE },
    { name: 'annotation_queue_items_call_op_name_idx', properties: ['queueId', 'callOpName', 'id'], where: LIVE },
    {
      name: 'annotation_queue_items_assigned_idx',
      properties: ['queueId', 'assignedUserId', 'createdAt', 'id'],
      where: `${LIVE} and assigned_user_id is not null`,
    },
  ],
});

/** One annotator's state of one item (contract 5.2), with the lease an `in_progress` holds. */
export const AnnotationItemProgressRecord = defineEntity({
  name: 'AnnotationItemProgressRecord',
  tableName: 'annotation_item_progress',
  properties: {
    itemId: p.text().primary(),
    annotatorUserId: p.text().primary(),
    queueId: p.text(),
    state: p.text(),
    leaseExpiresAt: p.datetime().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
  indexes: [{ name: 'annotation_item_progress_queue_idx', properties: ['queueId', 'annotatorUserId'] }],
});

/** A feedback record (contract 4). */
export const FeedbackRecord = defineEntity({
  name: 'FeedbackRecord',
  tableName: 'feedback',
  properties: {
    projectId: p.text().primary(),
    id: p.text().primary(),
    svcRef: p.text(),
    feedbackType: p.text(),
    payload: p.json<Record<string, unknown>>(),
    creator: p.text().nullable(),
    annotationRef: p.text().nullable(),
    runnableRef: p.text().nullable(),
    callRef: p.text().nullable(),
    triggerRef: p.text().nullable(),
    queueId: p.text().nullable(),
    svcUserId: p.text(),
    createdAt: p.datetime(),
    /** SHA-256 of the canonical JSON of the element the client sent: the idempotency check. */
    requestHash: p.text().nullable(),
  },
  indexes: [
    { name: 'feedback_created_idx', properties: ['projectId', 'createdAt', 'id'] },
    { name: 'feedback_svc_ref_idx', properties: ['projectId', 'svcRef'] },
    { name: 'feedback_queue_idx', properties: ['queueId', 'annotationRef'], where: 'queue_id is not null' },
    { name: 'feedback_user_idx', properties: ['projectId', 'svcUserId'] },
  ],
});

/**
 * A queue rule (contract 5.10): the calls that match `filter` are added to the queue as they are
 * stored (trigger "call") or named by new feedback (trigger "feedback"), and, from
 * `backfill_since`, the calls already stored, by the backfill worker in chunks. The backfill's
 * place (the last call considered, by started_at and id), its counts and its lease are written in
 * the transaction of the items of each chunk.
 */
export const QueueRuleRecord = defineEntity({
  name: 'QueueRuleRecord',
  tableName: 'queue_rules',
  properties: {
    id: p.text().primary(),
    projectId: p.text(),
    queueId: p.text(),
    name: p.text(),
    trigger: p.text(),
    filter: p.json<Record<string, unknown>>(),
    sampleRate: p.double(),
    maxItemsPerDay: p.type('integer').nullable(),
    enabled: p.boolean().columnType('boolean'),
    createdBy: p.text(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
    deletedAt: p.datetime().nullable(),
    backfillSince: p.datetime().nullable(),
    /** running | done | failed; null without a backfill. */
    backfillState: p.text().nullable(),
    backfillConsidered: p.type('integer'),
    backfillAdded: p.type('integer'),
    backfillReason: p.text().nullable(),
    /** Calls stored up to this time are the backfill's (later ones met the rule as they came). */
    backfillUntil: p.datetime().nullable(),
    /** The last call considered: the backfill goes on after it, in (started_at, id) order. */
    backfillAfterStartedAt: p.datetime().nullable(),
    backfillAfterId: p.text().nullable(),
    /** The server process working the backfill, until its lease expires (another may then take it over). */
    backfillLeaseOwner: p.text().nullable(),
    backfillLeaseExpiresAt: p.datetime().nullable(),
    /** Chunks that failed in a row; the backfill fails after a few. */
    backfillFailures: p.type('integer'),
  },
  indexes: [
    { name: 'queue_rules_queue_idx', properties: ['queueId', 'createdAt'], where: LIVE },
    { name: 'queue_rules_project_idx', properties: ['projectId', 'trigger'], where: LIVE },
    { name: 'queue_rules_backfill_idx', properties: ['backfillState', 'backfillLeaseExpiresAt'], where: LIVE },
  ],
});

/**
 * A rule's counts of one UTC day, in shards: its stats are their sums, and their `added` is what
 * max_items_per_day is held against. Written in the transaction that adds the items: a capped
 * rule counts in shard 0 (its row lock on PostgreSQL is what keeps two concurrent writes under
 * the cap), an uncapped one in a shard each write picks (domain/rule-items.ts).
 */
export const QueueRuleDayRecord = defineEntity({
  name: 'QueueRuleDayRecord',
  tableName: 'queue_rule_days',
  properties: {
    ruleId: p.text().primary(),
    /** YYYY-MM-DD, UTC. */
    day: p.text().primary(),
    shard: p.type('integer').primary(),
    considered: p.type('integer'),
    matched: p.type('integer'),
    sampledOut: p.type('integer'),
    capped: p.type('integer'),
    added: p.type('integer'),
    lastAddedAt: p.datetime().nullable(),
  },
});

/** The failed-authentication brake's counts, shared by every process (PostgreSQL only: SQLite counts in memory). */
export const AuthFailureRecord = defineEntity({
  name: 'AuthFailureRecord',
  tableName: 'auth_failures',
  properties: {
    client: p.text().primary(),
    failures: p.type('integer'),
    windowEnds: p.datetime(),
  },
  indexes: [{ name: 'auth_failures_window_ends_idx', properties: ['windowEnds'] }],
});

/** A project's webhook (contract 5.13). Secrets are sealed under the server key (domain/webhook-secrets.ts). */
export const WebhookRecord = defineEntity({
  name: 'WebhookRecord',
  tableName: 'webhooks',
  properties: {
    id: p.text().primary(),
    projectId: p.text(),
    url: p.text(),
    events: p.json<string[]>(),
    description: p.text().nullable(),
    secret: p.text(),
    previousSecret: p.text().nullable(),
    previousSecretExpiresAt: p.datetime().nullable(),
    disabledAt: p.datetime().nullable(),
    disabledReason: p.text().nullable(),
    /** When the current run of failed attempts began; null after a success. */
    failingSince: p.datetime().nullable(),
    createdBy: p.text(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
    deletedAt: p.datetime().nullable(),
  },
  indexes: [{ name: 'webhooks_project_idx', properties: ['projectId', 'createdAt'], where: LIVE }],
});

/** An event, written in the transaction of the change that caused it (the outbox). */
export const WebhookEventRecord = defineEntity({
  name: 'WebhookEventRecord',
  tableName: 'webhook_events',
  properties: {
    id: p.text().primary(),
    projectId: p.text(),
    type: p.text(),
    /** The payload's JSON text as written (not jsonb: every attempt sends the same bytes). */
    data: p.text(),
    createdAt: p.datetime(),
  },
  indexes: [{ name: 'webhook_events_created_idx', properties: ['createdAt'] }],
});

/**
 * One event to one webhook: its state, attempts, and the lease of the process attempting it. A
 * pending delivery, and only a pending one, has a next attempt (the two indexes rest on that).
 */
export const WebhookDeliveryRecord = defineEntity({
  name: 'WebhookDeliveryRecord',
  tableName: 'webhook_deliveries',
  properties: {
    id: p.text().primary(),
    webhookId: p.text(),
    eventId: p.text(),
    state: p.text(),
    attempts: p.type('integer'),
    lastStatus: p.type('integer').nullable(),
    lastError: p.text().nullable(),
    nextAttemptAt: p.datetime().nullable(),
    leaseOwner: p.text().nullable(),
    leaseExpiresAt: p.datetime().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
  uniques: [{ name: 'webhook_deliveries_event_uq', properties: ['eventId', 'webhookId'] }],
  indexes: [
    { name: 'webhook_deliveries_due_idx', properties: ['nextAttemptAt'], where: 'next_attempt_at is not null' },
    { name: 'webhook_deliveries_webhook_idx', properties: ['webhookId', 'createdAt', 'id'] },
    { name: 'webhook_deliveries_finished_idx', properties: ['updatedAt'], where: 'next_attempt_at is null' },
  ],
});

/** A signed-in person's session (contract 5.12): only the SHA-256 of its token is stored. */
export const SessionRecord = defineEntity({
  name: 'SessionRecord',
  tableName: 'sessions',
  properties: {
    id: p.text().primary(),
    tokenHash: p.text().unique(),
    userId: p.text(),
    clientAddress: p.text().nullable(),
    createdAt: p.datetime(),
    /** Kept to the minute: the idle expiry counts from it. */
    lastSeenAt: p.datetime(),
    /** The absolute end (LOUPE_SESSION_MAX_DAYS after sign-in). */
    expiresAt: p.datetime(),
  },
  indexes: [{ name: 'sessions_user_idx', properties: ['userId'] }],
});

/** An invitation to join an entity with a role (contract 5.12); only the SHA-256 of its token is stored. */
export const InvitationRecord = defineEntity({
  name: 'InvitationRecord',
  tableName: 'invitations',
  properties: {
    id: p.text().primary(),
    entity: p.text(),
    role: p.text(),
    tokenHash: p.text().unique(),
    email: p.text().nullable(),
    createdBy: p.text(),
    createdAt: p.datetime(),
    expiresAt: p.datetime(),
    revokedAt: p.datetime().nullable(),
    revokedBy: p.text().nullable(),
    acceptedAt: p.datetime().nullable(),
    acceptedBy: p.text().nullable(),
  },
  indexes: [{ name: 'invitations_entity_idx', properties: ['entity', 'createdAt'] }],
});

/**
 * A person's account at a single sign-on provider (contract 5.12): the provider's issuer and its
 * `sub` for them name the user, whatever their username or email there becomes.
 */
export const UserIdentityRecord = defineEntity({
  name: 'UserIdentityRecord',
  tableName: 'user_identities',
  properties: {
    issuer: p.text().primary(),
    subject: p.text().primary(),
    userId: p.text(),
    createdAt: p.datetime(),
  },
  indexes: [{ name: 'user_identities_user_idx', properties: ['userId'] }],
});

/** One line of an entity's audit log (contract 5.12); `entity` is null for a failed sign-in of an unknown username. */
export const AuditEventRecord = defineEntity({
  name: 'AuditEventRecord',
  tableName: 'audit_events',
  properties: {
    id: p.text().primary(),
    entity: p.text().nullable(),
    action: p.text(),
    actorUserId: p.text().nullable(),
    actorUsername: p.text().nullable(),
    subjectUserId: p.text().nullable(),
    detail: p.json<Record<string, unknown>>().nullable(),
    clientAddress: p.text().nullable(),
    createdAt: p.datetime(),
  },
  indexes: [{ name: 'audit_events_entity_idx', properties: ['entity', 'createdAt', 'id'] }],
});

/** The entities of a dialect's schema. */
export function entitiesOf(dialect: 'sqlite' | 'postgresql') {
  const shared = [
    User, ApiKey, EntityRecord, Membership, Project, Call, AnnotationSpecRecord, AnnotationQueueRecord, AnnotationQueueAssigneeRecord, AnnotationQueueItemRecord,
    AnnotationItemProgressRecord, FeedbackRecord, ServerSecret, QueueRuleRecord, QueueRuleDayRecord, WebhookRecord, WebhookEventRecord, WebhookDeliveryRecord,
    SessionRecord, InvitationRecord, AuditEventRecord, UserIdentityRecord,
  ];
  return dialect === 'postgresql' ? [...shared, AuthFailureRecord] : shared;
}

/**
 * The database as typed Kysely sees it (typedKysely in sql.ts): a table per entity by its table
 * name, its columns snake_case, typed as the entity declares them (dates as Date, JSON parsed).
 */
export type LoupeDatabase = InferKyselyDB<ReturnType<typeof entitiesOf>[number]>;
