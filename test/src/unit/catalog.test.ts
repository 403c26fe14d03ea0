import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CatalogError, parseCatalog } from '@loupe/server';
import { describe, expect, it } from 'vitest';

const DEFAULT_CATALOG = readFileSync(fileURLToPath(new URL('../../../server/src/catalog/default-models.json', import.meta.url)), 'utf8');

type Entry = Record<string, any>;

function valid(id: string): Entry {
  return {
    id,
    name: `Model ${id}`,
    created: 1733506137,
    input_modalities: ['text', 'image'],
    output_modalities: ['text'],
    quantization: 'fp8',
    context_length: 131072,
    max_output_length: 16384,
    pricing: {
      prompt: '0.00000013',
      completion: '0.00000039',
      image: '0',
      request: '0',
      input_cache_reads: '0.000000065',
      input_cache_writes: '0',
    },
    supported_sampling_parameters: ['temperature', 'top_p', 'seed'],
    supported_features: ['tools', 'json_mode'],
    datacenters: [{ country_code: 'US' }, { country_code: 'DE' }],
  };
}

const REQUIRED = [
  'id',
  'name',
  'created',
  'input_modalities',
  'output_modalities',
  'quantization',
  'context_length',
  'max_output_length',
  'pricing',
  'supported_sampling_parameters',
  'supported_features',
  'datacenters',
];

/** The broken entry sits third, after two good ones, so the index in the message means something. */
function catalogWith(broken: Entry): string {
  return JSON.stringify({ data: [valid('good/one'), valid('good/two'), broken] });
}

function failure(text: string): string {
  try {
    parseCatalog(text, 'test-catalog.json');
  } catch (error) {
    expect(error).toBeInstanceOf(CatalogError);
    return (error as Error).message;
  }
  throw new Error('the catalog was accepted');
}

function broken(change: (entry: Entry) => void, id = 'bad/model'): Entry {
  const entry = valid(id);
  change(entry);
  return entry;
}

// [what is wrong, the broken entry, the field the message must name, text the message must hold]
const RULES: [string, Entry, string, string?][] = [
  ...REQUIRED.filter((field) => field !== 'id').map(
    (field): [string, Entry, string] => [`missing ${field}`, broken((e) => delete e[field]), field],
  ),
  ['unknown extra field', broken((e) => (e.colour = 'blue')), '(object)', 'colour'],
  ['quantization int3', broken((e) => (e.quantization = 'int3')), 'quantization'],
  ['quantization in upper case', broken((e) => (e.quantization = 'FP8')), 'quantization'],
  ['sampling parameter outside the set', broken((e) => e.supported_sampling_parameters.push('mirostat')), 'supported_sampling_parameters[3]'],
  ['feature outside the set', broken((e) => (e.supported_features = ['vision'])), 'supported_features[0]'],
  ['input modality outside the set', broken((e) => (e.input_modalities = ['text', 'smell'])), 'input_modalities[1]'],
  // "embeddings" is an output modality only, "file" an input modality only.
  ['output-only modality as input', broken((e) => (e.input_modalities = ['embeddings'])), 'input_modalities[0]'],
  ['input-only modality as output', broken((e) => (e.output_modalities = ['file'])), 'output_modalities[0]'],
  ['repeated input modality', broken((e) => (e.input_modalities = ['text', 'text'])), 'input_modalities', 'repeat'],
  ['repeated feature', broken((e) => (e.supported_features = ['tools', 'tools'])), 'supported_features', 'repeat'],
  ['repeated sampling parameter', broken((e) => (e.supported_sampling_parameters = ['seed', 'seed'])), 'supported_sampling_parameters', 'repeat'],
  ['repeated output modality', broken((e) => (e.output_modalities = ['text', 'text'])), 'output_modalities', 'repeat'],
  ['pricing without image', broken((e) => delete e.pricing.image), 'pricing.image'],
  ['pricing with an extra key', broken((e) => (e.pricing.discount = '0')), 'pricing', 'discount'],
  ['price as a number', broken((e) => (e.pricing.prompt = 0.00000013)), 'pricing.prompt'],
  ['price in exponent notation', broken((e) => (e.pricing.prompt = '2.2e-7')), 'pricing.prompt'],
  ['negative price', broken((e) => (e.pricing.completion = '-0.1')), 'pricing.completion'],
  ['country code in lower case', broken((e) => (e.datacenters[1].country_code = 'us')), 'datacenters[1].country_code'],
  ['unassigned country code', broken((e) => (e.datacenters[0].country_code = 'ZZ')), 'datacenters[0].country_code'],
  ['three-letter country code', broken((e) => (e.datacenters[0].country_code = 'USA')), 'datacenters[0].country_code'],
  ['datacenter with an extra key', broken((e) => (e.datacenters[0].city = 'Berlin')), 'datacenters[0]', 'city'],
  ['context_length 0', broken((e) => (e.context_length = 0)), 'context_length'],
  ['max_output_length over context_length', broken((e) => (e.max_output_length = e.context_length + 1)), 'max_output_length', 'context_length'],
  ['non-integer created', broken((e) => (e.created = 1733506137.5)), 'created'],
  ['created as a string', broken((e) => (e.created = '2024-12-06')), 'created'],
];

describe('parseCatalog', () => {
  it.each(RULES)('rejects %s, naming the entry and the field', (_what, entry, field, mentions) => {
    const message = failure(catalogWith(entry));
    expect(message).toContain('test-catalog.json');
    expect(message).toContain(`entry 2 ("bad/model") field ${field}:`);
    if (mentions) expect(message).toContain(mentions);
    // Only the broken entry is named.
    expect(message).not.toMatch(/entry [01]\b/);
  });

  it('rejects an entry without id, naming its index and the field', () => {
    expect(failure(catalogWith(broken((e) => delete e.id))))
      .toMatch(/entry 2 field id:/);
  });

  it('rejects an entry that is not an object', () => {
    expect(failure(JSON.stringify({ data: [valid('a'), null] }))).toMatch(/entry 1\b/);
  });

  it('rejects duplicate ids, naming both entries', () => {
    const message = failure(JSON.stringify({ data: [valid('same'), valid('other'), valid('same')] }));
    expect(message).toContain('entry 2 ("same") field id:');
    expect(message).toMatch(/entry 0\b/);
  });

  it('reports every problem, one line each', () => {
    const message = failure(
      JSON.stringify({ data: [broken((e) => (e.quantization = 'int3'), 'bad/a'), valid('fine'), broken((e) => (e.pricing.prompt = '2.2e-7'), 'bad/b')] }),
    );
    const lines = message.split('\n').slice(1).map((line) => line.trim());
    expect(lines).toEqual([expect.stringMatching(/^entry 0 \("bad\/a"\) field quantization:/), expect.stringMatching(/^entry 2 \("bad\/b"\) field pricing.prompt:/)]);
  });

  it('rejects text that is not JSON', () => {
    expect(failure('{"data": [')).toMatch(/not valid JSON/);
    expect(failure('')).toMatch(/not valid JSON/);
  });

  it.each([
    ['an array', []],
    ['another key', { models: [] }],
    ['data as an object', { data: {} }],
    ['null', null],
    ['a string', 'models'],
  ])('rejects a top level that is %s', (_what, document) => {
    expect(failure(JSON.stringify(document))).toMatch(/must be an object \{"data": \[/);
  });

  it('accepts the default catalog as it is', () => {
    const snapshot = parseCatalog(DEFAULT_CATALOG);
    expect(snapshot.models).toEqual(JSON.parse(DEFAULT_CATALOG).data);
    expect(snapshot.models.length).toBeGreaterThan(0);
    expect(snapshot.version).toMatch(/^[A-Za-z0-9_-]+$/);
  });

  it('accepts an empty data array', () => {
    expect(parseCatalog('{"data": []}').models).toEqual([]);
  });

  it('accepts the boundary values of each rule', () => {
    const edge = broken((e) => {
      e.max_output_length = e.context_length;
      e.created = 0;
      e.supported_sampling_parameters = [];
      e.supported_features = [];
      e.pricing.prompt = '1.5';
      e.quantization = 'int4';
    });
    expect(parseCatalog(JSON.stringify({ data: [edge] })).models).toEqual([edge]);
  });

  it('gives the same version to the same content and another to other content', () => {
    const a = parseCatalog(catalogWith(valid('x')));
    expect(parseCatalog(catalogWith(valid('x'))).version).toBe(a.version);
    expect(parseCatalog(catalogWith(valid('y'))).version).not.toBe(a.version);
  });
});
