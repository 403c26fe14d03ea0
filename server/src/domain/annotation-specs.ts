import type { InferEntity } from '@mikro-orm/core';
import { objectRef, parseRef, type AnnotationSpec, type AnnotationSpecCreateReq, type AnnotationSpecQueryReq } from '@loupe/shared';
import { AnnotationSpecRecord } from '../db/entities.ts';
import type { Em } from '../db/orm.ts';
import { perDialect, sqlRows, storedBytes, type SqlScope } from '../db/sql.ts';
import { sql, type Statement } from '../db/statement.ts';
import { ensureProject } from './access.ts';
import { requireAnswerFits } from './answer-budget.ts';
import { invalid } from './errors.ts';
import { contentHash } from './idempotency.ts';
import { compileFieldSchema } from './json-schema.ts';

type SpecRow = InferEntity<typeof AnnotationSpecRecord>;

/** The digest covers what the spec means (description and schema): same content, same ref. */
export function specDigest(description: string | null, fieldSchema: unknown): string {
  return Buffer.from(contentHash({ description, field_schema: fieldSchema }), 'hex').toString('base64url');
}

export function toSpecDto(row: SpecRow): AnnotationSpec {
  return {
    ref: objectRef(row.projectId, row.name, row.digest),
    project_id: row.projectId,
    name: row.name,
    digest: row.digest,
    description: row.description ?? null,
    field_schema: row.fieldSchema as AnnotationSpec['field_schema'],
    created_at: row.createdAt.toISOString(),
    created_by: row.createdBy,
  };
}

export async function createSpec(em: Em, userId: string, req: AnnotationSpecCreateReq) {
  const description = req.description ?? null;
  const digest = specDigest(description, req.field_schema);
  compileFieldSchema(req.field_schema, `${req.project_id}/${req.name}:${digest}`);
  const row = await em.transactional(async (tx) => {
    await ensureProject(tx, req.project_id);
    await tx
      .createQueryBuilder(AnnotationSpecRecord)
      .insert({
        projectId: req.project_id,
        name: req.name,
        digest,
        description,
        fieldSchema: req.field_schema,
        createdAt: new Date(),
        createdBy: userId,
      })
      .onConflict(['projectId', 'name', 'digest'])
      .ignore()
      .execute();
    // Re-created content keeps its first created_at.
    return tx.findOneOrFail(AnnotationSpecRecord, { projectId: req.project_id, name: req.name, digest });
  });
  const spec = toSpecDto(row);
  return { ref: spec.ref, name: spec.name, digest: spec.digest, created_at: spec.created_at };
}

export async function querySpecs(em: Em, req: AnnotationSpecQueryReq, budget: number): Promise<AnnotationSpec[]> {
  const byRef = (req.refs ?? []).map((ref, index) => {
    const parsed = parseRef(ref);
    if (!parsed.ok) throw invalid(`refs[${index}] ${parsed.reason}.`);
    if (parsed.ref.kind !== 'object' || parsed.ref.extra.length) throw invalid(`refs[${index}] must be an object ref <name>:<digest>.`);
    if (parsed.ref.projectId !== req.project_id) throw invalid(`refs[${index}] belongs to another project.`);
    return { name: parsed.ref.name, digest: parsed.ref.digest };
  });
  const names = req.names ?? [];
  const or = [...(names.length ? [{ name: { $in: names } }] : []), ...byRef];
  if (!or.length && (req.names || req.refs)) return [];
  // The list has no pages: one whose specs would pass the answer's budget is refused before it is read.
  const wanted: Statement[] = [];
  if (names.length) wanted.push(sql`name in (${sql.list(names)})`);
  if (byRef.length) wanted.push(sql`(name, digest) in (values ${sql.join(byRef.map((ref) => sql`(${ref.name}, ${ref.digest})`), ', ')})`);
  const where = wanted.length ? sql`project_id = ${req.project_id} and (${sql.join(wanted, ' or ')})` : sql`project_id = ${req.project_id}`;
  const [total] = await sqlRows<{ bytes: number | string | null }>(em, sql`select sum(${specBytes(em)}) as bytes from annotation_specs where ${where}`);
  requireAnswerFits({ what: 'annotation specs', bytes: total?.bytes ?? 0, budget, narrower: 'ask for fewer by names or refs' });
  const rows = await em.find(
    AnnotationSpecRecord,
    { projectId: req.project_id, ...(or.length ? { $or: or } : {}) },
    { orderBy: { name: 'asc', createdAt: 'asc', digest: 'asc' } },
  );
  return rows.map(toSpecDto);
}

/**
 * The bytes of a spec's JSON in an answer, as stored: its schema and text columns, with name,
 * digest and project twice (their fields and the ref), plus field names and times.
 */
const specBytes = perDialect((db) => {
  const once = [storedBytes(db, 'field_schema', 'json'), storedBytes(db, 'description'), storedBytes(db, 'created_by')];
  const twice = ['name', 'digest', 'project_id'].map((column) => sql`2 * ${storedBytes(db, column)}`);
  return sql`${sql.join([...once, ...twice], ' + ')} + ${sql.raw(String(SPEC_FRAME_BYTES))}`;
});

/** Field names, punctuation, the ref's scheme and created_at of a spec's JSON. */
const SPEC_FRAME_BYTES = 200;

/**
 * Resolves an object ref to a stored spec of the project, or explains why not. `field` names the
 * offending field in the reason (e.g. `scorer_refs[2]`, `batch[4].annotation_ref`).
 */
export async function resolveSpecRef(em: Em, { projectId, ref, field }: { projectId: string; ref: string; field: string }): Promise<SpecRow> {
  const parsed = parseRef(ref);
  if (!parsed.ok) throw invalid(`${field} ${parsed.reason}.`);
  if (parsed.ref.kind !== 'object') throw invalid(`${field} must be an object ref (svc:///<entity>/<project>/object/<name>:<digest>).`);
  if (parsed.ref.projectId !== projectId) throw invalid(`${field} must be a ref in project ${projectId}.`);
  const row = await em.findOne(AnnotationSpecRecord, { projectId, name: parsed.ref.name, digest: parsed.ref.digest });
  if (!row) throw invalid(`${field} names no stored annotation spec of project ${projectId}.`);
  return row;
}
