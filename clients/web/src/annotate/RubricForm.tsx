import { useId } from 'react';
import { drawsColourEmoji } from './emoji-support.ts';
import { NOTE_MAX } from './feedback-records.ts';
import { checkValue, fieldKind, fieldOptions, optionLabel, toggled, type FieldInput, type FieldKind, type JsonValue } from './rubric-fields.ts';

// The queue's rubric as a form: one field per scorer spec (labelled with the spec's name), then
// the note and the optional reaction. The page owns the values; this only shows and edits them.

/** A rubric field; an optional one (its schema takes null, or it is free text) may be left empty, which stores nothing for it. */
export type RubricField = { ref: string; name: string; description: string | null; kind: FieldKind; optional: boolean };

/** A spec as a rubric field. Free text is a remark, and a schema that takes null says the value may be missing. */
export function toRubricField(spec: { ref: string; name: string; description: string | null; field_schema: Record<string, unknown> }): RubricField {
  const kind = fieldKind(spec.field_schema);
  const optional = kind.kind === 'text' || checkValue(spec.field_schema, null) === null;
  return { ref: spec.ref, name: spec.name, description: spec.description, kind, optional };
}

/** Reactions offered: fully-qualified RGI emoji, as svc.reaction.1 requires. */
export const REACTIONS = [
  { emoji: '👍', name: 'thumbs up' },
  { emoji: '👎', name: 'thumbs down' },
  { emoji: '❤️', name: 'red heart' },
  { emoji: '🎉', name: 'party popper' },
  { emoji: '🤔', name: 'thinking face' },
] as const;

type Props = {
  fields: RubricField[];
  inputs: Map<string, FieldInput>;
  errors: Map<string, string>;
  note: string;
  reaction: string;
  onInput: (ref: string, input: FieldInput) => void;
  onNote: (note: string) => void;
  onReaction: (emoji: string) => void;
  noteRef: React.Ref<HTMLTextAreaElement>;
};

export function RubricForm({ fields, inputs, errors, note, reaction, onInput, onNote, onReaction, noteRef }: Props) {
  const id = useId();
  const emoji = drawsColourEmoji();
  return (
    <div className="rubric">
      {fields.map((field, index) => (
        <RubricInput key={field.ref} id={`${id}-f${index}`} field={field} input={inputs.get(field.ref)} error={errors.get(field.ref)} onInput={(input) => onInput(field.ref, input)} />
      ))}
      <div className="rubric-field">
        <label htmlFor={`${id}-note`}>Note</label>
        <textarea
          id={`${id}-note`}
          ref={noteRef}
          rows={3}
          maxLength={NOTE_MAX}
          value={note}
          onChange={(event) => onNote(event.target.value)}
          aria-invalid={errors.has('note') ? true : undefined}
          aria-describedby={errors.has('note') ? `${id}-note-error` : undefined}
        />
        {errors.has('note') ? (
          <p id={`${id}-note-error`} className="error field-error">
            {errors.get('note')}
          </p>
        ) : null}
      </div>
      <fieldset className="rubric-field reactions" role="radiogroup">
        <legend>Reaction (optional)</legend>
        <div className="options">
          <label className="option">
            <input type="radio" name={`${id}-reaction`} checked={reaction === ''} onChange={() => onReaction('')} />
            <span>None</span>
          </label>
          {REACTIONS.map(({ emoji: glyph, name }) => (
            <label className="option" key={glyph}>
              <input type="radio" name={`${id}-reaction`} checked={reaction === glyph} onChange={() => onReaction(glyph)} aria-label={name} />
              <span aria-hidden="true" className={emoji ? 'emoji' : 'emoji-name'}>
                {emoji ? glyph : name}
              </span>
            </label>
          ))}
        </div>
      </fieldset>
    </div>
  );
}

/** One rubric field as annotators see it (the annotate page, and the spec form's preview). */
export function RubricInput({ id, field, input, error, onInput }: { id: string; field: RubricField; input: FieldInput; error: string | undefined; onInput: (input: FieldInput) => void }) {
  const { kind } = field;
  const errorId = `${id}-error`;
  const describedBy = [field.description ? `${id}-about` : '', error ? errorId : ''].filter(Boolean).join(' ') || undefined;
  const about = field.description ? (
    <p id={`${id}-about`} className="field-about">
      {field.description}
    </p>
  ) : null;
  const message = error ? (
    <p id={errorId} className="error field-error">
      {error}
    </p>
  ) : null;
  const options = fieldOptions(kind);
  if (options.length) {
    const several = kind.kind === 'multi';
    const chosen = new Set(input && 'chosen' in input ? (several && Array.isArray(input.chosen) ? input.chosen : [input.chosen]).map((value) => JSON.stringify(value)) : []);
    const titles = kind.kind === 'scale' || kind.kind === 'choice' ? kind.titles : undefined;
    return (
      <fieldset
        className="rubric-field"
        role={several ? undefined : 'radiogroup'}
        data-rubric-field={field.ref}
        aria-describedby={describedBy}
        aria-invalid={error ? true : undefined}
      >
        <legend>
          {field.name}
          {field.optional ? <span className="optional"> (optional)</span> : null}
          {several ? <span className="optional"> (any number)</span> : null}
        </legend>
        {about}
        <div className={`options${kind.kind === 'scale' ? ' scale' : ''}`}>
          {options.map((option: JsonValue, index) => {
            const label = optionLabel(option);
            const title = titles?.get(JSON.stringify(option));
            return (
              <label className="option" key={JSON.stringify(option)}>
                <input
                  type={several ? 'checkbox' : 'radio'}
                  name={id}
                  checked={chosen.has(JSON.stringify(option))}
                  onChange={() => onInput({ chosen: kind.kind === 'multi' ? toggled(kind, input, option) : option })}
                />
                <span>{label}</span>
                {title ? <span className="option-title">{title}</span> : null}
                {index < 9 && label !== String(index + 1) ? (
                  <kbd className="option-key" aria-hidden="true">
                    {index + 1}
                  </kbd>
                ) : null}
              </label>
            );
          })}
        </div>
        {message}
      </fieldset>
    );
  }
  const text = input && 'text' in input ? input.text : '';
  const common = {
    id,
    value: text,
    'aria-invalid': error ? true : undefined,
    'aria-describedby': describedBy,
  } as const;
  // A refused submit focuses the field's label (not its text box), where shortcut keys stay
  // shortcuts instead of typing into the box; a screen reader reads the name and the error.
  return (
    <div className="rubric-field" data-rubric-field={field.ref}>
      <label htmlFor={id} tabIndex={-1} aria-describedby={error ? errorId : undefined}>
        {field.name}
        {field.optional ? <span className="optional"> (optional)</span> : null}
      </label>
      {about}
      {kind.kind === 'number' ? (
        <input {...common} type="text" inputMode={kind.integer ? 'numeric' : 'decimal'} autoComplete="off" onChange={(event) => onInput({ text: event.target.value })} />
      ) : kind.kind === 'text' && !kind.multiline ? (
        <input {...common} type="text" autoComplete="off" onChange={(event) => onInput({ text: event.target.value })} />
      ) : (
        <textarea {...common} rows={kind.kind === 'json' ? 4 : 3} spellCheck={kind.kind !== 'json'} onChange={(event) => onInput({ text: event.target.value })} />
      )}
      {kind.kind === 'json' ? <p className="field-about">A JSON value.</p> : null}
      {message}
    </div>
  );
}
