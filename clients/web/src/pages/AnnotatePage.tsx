import type { QueuePageProps } from './page-props.ts';

// Placeholder until the page is built (issue 11/12 work in progress).
export function AnnotatePage({ projectId, queueId }: QueuePageProps) {
  return <h1>annotate {projectId}</h1>;
}
