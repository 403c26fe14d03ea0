import { createHash } from 'node:crypto';
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { fieldPath, ModelEntry, type ModelListQuery } from '@loupe/shared';
import { z } from 'zod';
import type { Logger } from '../log.ts';

export class CatalogError extends Error {}

/** One validated catalog, with its serialized forms computed once. */
export type CatalogSnapshot = {
  models: readonly ModelEntry[];
  /** Content hash of the catalog; part of every ETag. */
  version: string;
  loadedAt: Date;
};

const CatalogFile = z.object({ data: z.array(z.unknown()) });

/**
 * Validates a catalog document (`{"data": [ModelEntry, ...]}`). Errors name the entry (index and
 * id) and the field, one line each.
 */
export function parseCatalog(text: string, source = 'catalog'): CatalogSnapshot {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new CatalogError(`${source}: not valid JSON (${(error as Error).message})`);
  }
  const file = CatalogFile.safeParse(json);
  if (!file.success) throw new CatalogError(`${source}: must be an object {"data": [model, ...]}`);
  const problems: string[] = [];
  const models: ModelEntry[] = [];
  const seen = new Map<string, number>();
  file.data.data.forEach((raw, index) => {
    const id = typeof (raw as { id?: unknown })?.id === 'string' ? (raw as { id: string }).id : undefined;
    const entry = `entry ${index}${id ? ` ("${id}")` : ''}`;
    const parsed = ModelEntry.safeParse(raw);
    if (!parsed.success) {
      for (const issue of parsed.error.issues) {
        const field = fieldPath(issue.path) || (issue.code === 'unrecognized_keys' ? '(object)' : '(entry)');
        problems.push(`${entry} field ${field}: ${issue.message}`);
      }
      return;
    }
    const earlier = seen.get(parsed.data.id);
    if (earlier !== undefined) problems.push(`${entry} field id: duplicates the id of entry ${earlier}`);
    else seen.set(parsed.data.id, index);
    models.push(parsed.data);
  });
  if (problems.length) throw new CatalogError(`${source} is invalid:\n  ${problems.join('\n  ')}`);
  const version = createHash('sha256').update(JSON.stringify(models)).digest('base64url').slice(0, 22);
  return { models, version, loadedAt: new Date() };
}

export function filterModels(models: readonly ModelEntry[], query: ModelListQuery): ModelEntry[] {
  return models.filter(
    (model) =>
      (!query.input_modality || model.input_modalities.includes(query.input_modality)) &&
      (!query.output_modality || model.output_modalities.includes(query.output_modality)) &&
      (!query.feature || model.supported_features.includes(query.feature)) &&
      (!query.quantization || model.quantization === query.quantization),
  );
}

/**
 * The deployment's model catalog: loaded and validated at start-up (an invalid file stops it),
 * reloaded on SIGHUP or when the file changes. A reload that fails validation keeps the last good
 * catalog and logs why.
 */
export class ModelCatalog {
  readonly path: string;
  readonly #log: Logger;
  #snapshot: CatalogSnapshot;
  #watcher: FSWatcher | undefined;
  #debounce: NodeJS.Timeout | undefined;
  readonly #listeners = new Set<(snapshot: CatalogSnapshot) => void>();

  constructor(path: string, log: Logger) {
    this.path = path;
    this.#log = log;
    this.#snapshot = ModelCatalog.#read(path);
  }

  static #read(path: string): CatalogSnapshot {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw new CatalogError(`model catalog ${path}: cannot be read (${(error as NodeJS.ErrnoException).code ?? error})`);
    }
    return parseCatalog(text, `model catalog ${path}`);
  }

  get snapshot(): CatalogSnapshot {
    return this.#snapshot;
  }

  onChange(listener: (snapshot: CatalogSnapshot) => void): void {
    this.#listeners.add(listener);
  }

  /** Re-reads the file; returns whether the new catalog is now served. */
  reload(): boolean {
    try {
      const next = ModelCatalog.#read(this.path);
      const changed = next.version !== this.#snapshot.version;
      this.#snapshot = next;
      this.#log.info({ catalog: this.path, models: next.models.length, version: next.version, changed }, 'model catalog loaded');
      if (changed) for (const listener of this.#listeners) listener(next);
      return true;
    } catch (error) {
      this.#log.error(
        { catalog: this.path, err: (error as Error).message, serving_version: this.#snapshot.version },
        'model catalog reload failed; keeping the previous catalog',
      );
      return false;
    }
  }

  /** Reloads when the file changes (editors replace files, so the watch follows its folder). */
  watch(): void {
    if (this.#watcher) return;
    const file = this.path.split('/').pop()!;
    const folder = this.path.slice(0, this.path.length - file.length) || '.';
    this.#watcher = watch(folder, { persistent: false }, (_event, name) => {
      if (name !== file) return;
      clearTimeout(this.#debounce);
      this.#debounce = setTimeout(() => this.reload(), 100);
    });
    this.#watcher.on('error', (error) => this.#log.warn({ err: error.message }, 'model catalog watch stopped'));
  }

  close(): void {
    clearTimeout(this.#debounce);
    this.#watcher?.close();
    this.#watcher = undefined;
  }
}
