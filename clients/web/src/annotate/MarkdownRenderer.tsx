import ReactMarkdown, { type Components } from 'react-markdown';

// Text from calls is untrusted. react-markdown builds React elements from the Markdown syntax tree
// (no innerHTML): raw HTML in the text is shown as text, never parsed, and link URLs other than
// http(s), mailto and relative ones are dropped by its default urlTransform. Images are shown as
// links instead of being loaded, so a call cannot make the page fetch anything (and the CSP's
// img-src would refuse other origins anyway).
const components: Components = {
  img: ({ src, alt }) =>
    typeof src === 'string' && src ? (
      <a href={src} rel="noopener noreferrer nofollow" target="_blank">
        image: {alt || src}
      </a>
    ) : (
      <span>image: {alt}</span>
    ),
  a: ({ href, children }) => (
    <a href={href} rel="noopener noreferrer nofollow" target="_blank">
      {children}
    </a>
  ),
};

export default function MarkdownRenderer({ text }: { text: string }) {
  return <ReactMarkdown components={components}>{text}</ReactMarkdown>;
}
