// `@loupe/client/export`: exports shared by the CLI and the web app (which loads it only when a
// person exports, so that it is no part of the app's first load).
export { csvCell, csvHeader, csvLines, encoder, jsonLines, type Encoder, type ExportFormat } from './encode.ts';
export { pagedBy, pages, type CursorListener, type Page, type Paging, type Retry } from './pages.ts';
export { chunkByLength, exportQueue, planQueueExport, queueColumns, ITEM_COLUMNS, TRAILING_COLUMNS, type ExportChunk, type Person, type QueuePlan, type Spec } from './queue.ts';
export { majority, mean, specKind, type SpecKind } from './scores.ts';
