import { Link } from '@tanstack/react-router';
import { links } from '../routes.ts';

/**
 * What a page that reads or manages a project's data shows to an annotator of it: annotators are
 * blind to other annotators' work and manage nothing (contract 5.11; the server refuses anyway).
 */
export function NotForAnnotators() {
  return (
    <div className="panel narrow">
      <h1>Not available to annotators</h1>
      <p>
        Your role in this project is annotator: you work the queues open to you. <Link {...links.mine()}>Go to My queues</Link>.
      </p>
    </div>
  );
}
