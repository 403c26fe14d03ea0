import { defineEntity, p } from '@mikro-orm/core';

// Columns are snake_case (MikroORM's default naming); foreign keys are plain id columns whose
// constraints live in the migrations.

export const User = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: p.string().primary(),
    username: p.string().unique(),
    createdAt: p.datetime(),
  },
});

export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_keys',
  properties: {
    id: p.string().primary(),
    userId: p.string(),
    /** SHA-256 of the whole key, hex; the key itself is never stored. */
    keyHash: p.string().unique(),
    createdAt: p.datetime(),
    revokedAt: p.datetime().nullable(),
  },
});

/** An entity in the contract's sense: the owner of projects that users belong to. */
export const EntityRecord = defineEntity({
  name: 'EntityRecord',
  tableName: 'entities',
  properties: {
    name: p.string().primary(),
    createdAt: p.datetime(),
  },
});

export const Membership = defineEntity({
  name: 'Membership',
  tableName: 'memberships',
  properties: {
    userId: p.string().primary(),
    entity: p.string().primary(),
    role: p.string(),
    createdAt: p.datetime(),
  },
});

export const Project = defineEntity({
  name: 'Project',
  tableName: 'projects',
  properties: {
    /** `<entity>/<project>` */
    id: p.string().primary(),
    entity: p.string(),
    name: p.string(),
    createdAt: p.datetime(),
  },
});

export const Call = defineEntity({
  name: 'Call',
  tableName: 'calls',
  properties: {
    projectId: p.string().primary(),
    id: p.string().primary(),
    traceId: p.string(),
    opName: p.string(),
    startedAt: p.datetime(),
    endedAt: p.datetime().nullable(),
    inputs: p.json<Record<string, unknown>>().nullable(),
    output: p.json<unknown>().nullable(),
    attributes: p.json<Record<string, unknown>>().nullable(),
    exception: p.text().nullable(),
    /** SHA-256 of the canonical JSON of the element the client sent: the idempotency check. */
    requestHash: p.string(),
    createdAt: p.datetime(),
    createdBy: p.string(),
  },
});

export const AnnotationSpecRecord = defineEntity({
  name: 'AnnotationSpecRecord',
  tableName: 'annotation_specs',
  properties: {
    projectId: p.string().primary(),
    name: p.string().primary(),
    digest: p.string().primary(),
    description: p.text().nullable(),
    fieldSchema: p.json<Record<string, unknown>>(),
    createdAt: p.datetime(),
    createdBy: p.string(),
  },
});

export const AnnotationQueueRecord = defineEntity({
  name: 'AnnotationQueueRecord',
  tableName: 'annotation_queues',
  properties: {
    id: p.string().primary(),
    projectId: p.string(),
    name: p.string(),
    description: p.text().nullable(),
    scorerRefs: p.json<string[]>(),
    annotationsPerItem: p.type('integer'),
    leaseSeconds: p.type('integer'),
    createdAt: p.datetime(),
    createdBy: p.string(),
    updatedAt: p.datetime(),
    deletedAt: p.datetime().nullable(),
  },
});

/** A secret the server made for itself (see db/server-secret.ts), shared by its processes. */
export const ServerSecret = defineEntity({
  name: 'ServerSecret',
  tableName: 'server_secrets',
  properties: {
    name: p.string().primary(),
    value: p.text(),
    createdAt: p.datetime(),
  },
});

export const entities = [User, ApiKey, EntityRecord, Membership, Project, Call, AnnotationSpecRecord, AnnotationQueueRecord, ServerSecret];
