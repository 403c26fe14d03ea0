import type { ProjectSpec } from './project-queries.ts';

/** A spec as people tell versions apart: its name and the start of its digest. */
export function SpecLabel({ spec }: { spec: ProjectSpec }) {
  return (
    <>
      <span className="spec-name">{spec.name}</span> <code className="digest">{spec.digest.slice(0, 8)}</code>
    </>
  );
}
