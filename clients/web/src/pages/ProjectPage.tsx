import type { PageProps } from './page-props.ts';

// Placeholder until the page is built (issue 11/12 work in progress).
export function ProjectPage({ projectId }: PageProps) {
  return <h1>project {projectId}</h1>;
}
