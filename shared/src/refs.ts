import { NAME_PART } from './project.ts';

// Refs name stored things: `svc:///<entity>/<project>/<kind>/<rest>` (contract section 6).
// One parser, used by every schema and domain rule that reads a ref.

export const REF_SCHEME = 'svc:///';
export const REF_EDGES = ['key', 'index', 'attr', 'id'] as const;
export type RefEdge = (typeof REF_EDGES)[number];

const OBJECT_NAME = /^[A-Za-z0-9._-]{1,128}$/;
const DIGEST = /^[^/:]+$/;
const CALL_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const INTEGER = /^(0|-?[1-9][0-9]*)$/;

export type ObjectRef = {
  kind: 'object' | 'op';
  entity: string;
  project: string;
  projectId: string;
  name: string;
  digest: string;
  extra: { edge: RefEdge; value: string }[];
};
export type CallRef = { kind: 'call'; entity: string; project: string; projectId: string; callId: string };
export type TableRef = { kind: 'table'; entity: string; project: string; projectId: string; digest: string };
export type Ref = ObjectRef | CallRef | TableRef;

export type RefParse = { ok: true; ref: Ref } | { ok: false; reason: string };

const fail = (reason: string): RefParse => ({ ok: false, reason });

/** Parses a ref; on failure the reason says which part is wrong. */
export function parseRef(text: string): RefParse {
  if (!text.startsWith(REF_SCHEME)) return fail(`must start with "${REF_SCHEME}"`);
  // Read in place from the parts of the whole text ('svc:', '', '', entity, project, kind, …):
  // feedback batches parse a ref or two per element, so nothing is copied that is not kept.
  const parts = text.split('/');
  const entity = parts[3];
  const project = parts[4];
  const kind = parts[5];
  const rest = 6; // the first part after the kind
  if (entity === undefined || !NAME_PART.test(entity)) return fail('has an invalid or missing entity');
  if (project === undefined || !NAME_PART.test(project)) return fail('has an invalid or missing project');
  const projectId = `${entity}/${project}`;
  switch (kind) {
    case 'object':
    case 'op': {
      const nameAndDigest = parts[rest];
      if (!nameAndDigest) return fail(`needs <name>:<digest> after /${kind}/`);
      const colon = nameAndDigest.indexOf(':');
      if (colon < 0) return fail(`needs <name>:<digest> after /${kind}/, the digest is missing`);
      const name = nameAndDigest.slice(0, colon);
      const digest = nameAndDigest.slice(colon + 1);
      if (!OBJECT_NAME.test(name)) return fail('has an invalid name: use 1-128 of [A-Za-z0-9._-]');
      if (!DIGEST.test(digest)) return fail('has an invalid digest: it must be non-empty without "/" or ":"');
      if ((parts.length - rest - 1) % 2 !== 0) return fail('has an edge without a value: extra parts come in /<edge>/<value> pairs');
      const extra: ObjectRef['extra'] = [];
      for (let i = rest + 1; i < parts.length; i += 2) {
        const edge = parts[i]!;
        const value = parts[i + 1]!;
        if (!(REF_EDGES as readonly string[]).includes(edge)) return fail(`has an unknown edge "${edge}": use ${REF_EDGES.join(', ')}`);
        if (!value) return fail(`has an empty value for edge "${edge}"`);
        if (edge === 'index' && !INTEGER.test(value)) return fail('has an index edge whose value is not an integer');
        extra.push({ edge: edge as RefEdge, value });
      }
      return { ok: true, ref: { kind, entity, project, projectId, name, digest, extra } };
    }
    case 'call': {
      const callId = parts[rest];
      if (parts.length !== rest + 1 || !CALL_ID.test(callId!)) return fail('needs exactly one call id (1-128 of [A-Za-z0-9._:-]) after /call/');
      return { ok: true, ref: { kind, entity, project, projectId, callId: callId! } };
    }
    case 'table': {
      const digest = parts[rest];
      if (parts.length !== rest + 1 || !DIGEST.test(digest!)) return fail('needs exactly one digest after /table/');
      return { ok: true, ref: { kind, entity, project, projectId, digest: digest! } };
    }
    default:
      return fail(kind ? `has an unknown kind "${kind}": use object, op, call or table` : 'has no kind');
  }
}

export function objectRef(projectId: string, name: string, digest: string, kind: 'object' | 'op' = 'object'): string {
  return `${REF_SCHEME}${projectId}/${kind}/${name}:${digest}`;
}

export function callRef(projectId: string, callId: string): string {
  return `${REF_SCHEME}${projectId}/call/${callId}`;
}
