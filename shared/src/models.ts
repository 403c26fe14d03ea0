import { iso31661 } from 'iso-3166/1.js';
import { z } from 'zod';

const COUNTRY_CODES: ReadonlySet<string> = new Set(iso31661.map((country) => country.alpha2));

export const QUANTIZATIONS = ['int4', 'int8', 'fp4', 'fp6', 'fp8', 'fp16', 'bf16', 'fp32'] as const;
export const SAMPLING_PARAMETERS = [
  'temperature',
  'top_p',
  'top_k',
  'repetition_penalty',
  'frequency_penalty',
  'presence_penalty',
  'stop',
  'seed',
] as const;
export const FEATURES = ['tools', 'json_mode', 'structured_outputs', 'web_search', 'reasoning'] as const;
export const INPUT_MODALITIES = ['text', 'image', 'file', 'audio', 'video'] as const;
export const OUTPUT_MODALITIES = ['text', 'image', 'embeddings', 'audio', 'video'] as const;

/** A USD amount in plain positional notation: `"0.00000022"`, never `"2.2e-7"`. */
const Price = z
  .string()
  .regex(/^(0|[1-9][0-9]*)(\.[0-9]+)?$/, 'must be a non-negative decimal string in plain notation, such as "0.00000022"');

function uniqueSubset<const T extends readonly [string, ...string[]]>(values: T) {
  return z
    .array(z.enum(values))
    .refine((list) => new Set(list).size === list.length, 'must not repeat a value');
}

export const ModelPricing = z.strictObject({
  prompt: Price,
  completion: Price,
  image: Price,
  request: Price,
  input_cache_reads: Price,
  input_cache_writes: Price,
});

export const ModelEntry = z
  .strictObject({
    id: z.string().min(1).max(256),
    name: z.string().min(1).max(256),
    created: z.int().nonnegative().meta({ description: 'Unix seconds' }),
    input_modalities: uniqueSubset(INPUT_MODALITIES).min(1),
    output_modalities: uniqueSubset(OUTPUT_MODALITIES).min(1),
    quantization: z.enum(QUANTIZATIONS),
    context_length: z.int().positive(),
    max_output_length: z.int().positive(),
    pricing: ModelPricing,
    supported_sampling_parameters: uniqueSubset(SAMPLING_PARAMETERS),
    supported_features: uniqueSubset(FEATURES),
    datacenters: z.array(
      z.strictObject({
        country_code: z
          .string()
          .refine((code) => COUNTRY_CODES.has(code), 'must be an assigned ISO 3166-1 alpha-2 code in upper case, such as "US"'),
      }),
    ),
  })
  .refine((model) => model.max_output_length <= model.context_length, {
    path: ['max_output_length'],
    message: 'must not exceed context_length',
  })
  .meta({ id: 'ModelEntry' });
export type ModelEntry = z.infer<typeof ModelEntry>;

export const ModelList = z.strictObject({ data: z.array(ModelEntry) }).meta({ id: 'ModelList' });
export type ModelList = z.infer<typeof ModelList>;

/** Optional filters of the model list; unknown query parameters are ignored. */
export const ModelListQuery = z.object({
  input_modality: z.enum(INPUT_MODALITIES).optional(),
  output_modality: z.enum(OUTPUT_MODALITIES).optional(),
  feature: z.enum(FEATURES).optional(),
  quantization: z.enum(QUANTIZATIONS).optional(),
});
export type ModelListQuery = z.infer<typeof ModelListQuery>;
