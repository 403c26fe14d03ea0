import { lazy, Suspense } from 'react';

// Markdown is rendered by react-markdown, loaded with the first text that needs it so the app's
// first load stays small. Until it arrives the text shows as it is (React escapes it).
const MarkdownRenderer = lazy(() => import('./MarkdownRenderer.tsx'));

export function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown">
      <Suspense fallback={<p className="markdown-plain">{text}</p>}>
        <MarkdownRenderer text={text} />
      </Suspense>
    </div>
  );
}
