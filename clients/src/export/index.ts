// `@loupe/client/export`: the exports of the CLI and the web app (which loads this only when a
// person exports, so that it is no part of the app's first load).
export { encoder, type Encoder, type ExportFormat } from './encode.ts';
export { pagedBy, pages, type CursorListener, type Page, type Paging, type Retry } from './pages.ts';
export { exportQueue, planQueueExport, queueColumns, type ExportChunk, type Person, type QueuePlan, type Spec } from './queue.ts';
