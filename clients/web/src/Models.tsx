import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useId, useMemo, useState } from 'react';
import { apiClient, messageOf, modelsQuery, type Model, type ModelFilters } from './api.ts';
import { formatPerMillion } from './prices.ts';
import { ScrollTable } from './queue/ScrollTable.tsx';

// The values the model list's filters take (the contract's lists); the types keep them in step
// with the server's input schema.
type Choices<K extends keyof ModelFilters> = readonly NonNullable<ModelFilters[K]>[];
const INPUT_MODALITIES: Choices<'input_modality'> = ['text', 'image', 'file', 'audio', 'video'];
const OUTPUT_MODALITIES: Choices<'output_modality'> = ['text', 'image', 'embeddings', 'audio', 'video'];
const FEATURES: Choices<'feature'> = ['tools', 'json_mode', 'structured_outputs', 'web_search', 'reasoning'];
const QUANTIZATIONS: Choices<'quantization'> = ['int4', 'int8', 'fp4', 'fp6', 'fp8', 'fp16', 'bf16', 'fp32'];

const FILTERS = [
  { key: 'input_modality', label: 'Input modality', choices: INPUT_MODALITIES },
  { key: 'output_modality', label: 'Output modality', choices: OUTPUT_MODALITIES },
  { key: 'feature', label: 'Feature', choices: FEATURES },
  { key: 'quantization', label: 'Quantization', choices: QUANTIZATIONS },
] as const;

const numberFormat = new Intl.NumberFormat('en');

/** The public model catalog: no sign-in; the server filters, the page shows prices per million tokens. */
export function Models() {
  const client = useMemo(() => apiClient(), []);
  const [filters, setFilters] = useState<ModelFilters>({});
  const models = useQuery({ ...modelsQuery(client, filters), placeholderData: keepPreviousData });
  const idPrefix = useId();
  return (
    <>
      <h1>Model catalog</h1>
      <p>The models served through the partner router. Prices are in US dollars per million tokens.</p>
      <form className="filters" aria-label="Filter models" onSubmit={(event) => event.preventDefault()}>
        {FILTERS.map(({ key, label, choices }) => (
          <div className="field" key={key}>
            <label htmlFor={`${idPrefix}-${key}`}>{label}</label>
            <select
              id={`${idPrefix}-${key}`}
              value={filters[key] ?? ''}
              onChange={(event) => {
                const value = event.target.value;
                setFilters(({ [key]: _, ...rest }) => (value ? { ...rest, [key]: value } : rest));
              }}
            >
              <option value="">Any</option>
              {choices.map((choice) => (
                <option key={choice} value={choice}>
                  {choice}
                </option>
              ))}
            </select>
          </div>
        ))}
      </form>
      {models.isPending ? (
        <p>Loading…</p>
      ) : models.isError ? (
        <p className="error" role="alert">{messageOf(models.error)}</p>
      ) : (
        <>
          <p role="status" className="count">
            {models.data.length === 1 ? '1 model' : `${models.data.length} models`}
          </p>
          {models.data.length ? <ModelTable models={models.data} /> : <p>No model matches these filters.</p>}
        </>
      )}
    </>
  );
}

function ModelTable({ models }: { models: Model[] }) {
  return (
    <ScrollTable label="Models and their prices per million tokens">
      <table className="models">
        <caption className="visually-hidden">Models and their prices per million tokens</caption>
        <thead>
          <tr>
            <th scope="col">Model</th>
            <th scope="col">Input</th>
            <th scope="col">Output</th>
            <th scope="col">Quantization</th>
            <th scope="col" className="number">Context</th>
            <th scope="col" className="number">Prompt / 1M</th>
            <th scope="col" className="number">Completion / 1M</th>
            <th scope="col">Features</th>
          </tr>
        </thead>
        <tbody>
          {models.map((model) => (
            <tr key={model.id}>
              <th scope="row">
                {model.name}
                <span className="model-id">{model.id}</span>
              </th>
              <td>{model.input_modalities.join(', ')}</td>
              <td>{model.output_modalities.join(', ')}</td>
              <td>{model.quantization}</td>
              <td className="number">{numberFormat.format(model.context_length)}</td>
              <td className="number">{formatPerMillion(model.pricing.prompt)}</td>
              <td className="number">{formatPerMillion(model.pricing.completion)}</td>
              <td>{model.supported_features.join(', ') || '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </ScrollTable>
  );
}
