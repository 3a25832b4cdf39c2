/**
 * Writing any string as a selector value (docs/API.md §4): the one helper a client needs to
 * build `fieldSelector=spec.author=${escapeSelectorValue(author)}` from what a person typed,
 * whatever it holds. Public: `import { escapeSelectorValue } from 'svc-gateway/selectors'`
 * (package.json "exports"). No imports, so it runs anywhere (a plugin, a script, a browser).
 *
 * Escapes every character ./selector.ts reserves in values (`\ , ( ) = ! < > ~`) and every
 * whitespace character, so the result reads back as exactly `value` both as a single value
 * (`k=…`, `k!=…`) and as a member of a set (`k in (…)`), where whitespace ends a member.
 * Label values cannot hold these characters at all (docs/API.md §3): escaping does not make a
 * bad label value valid.
 */
export function escapeSelectorValue(value: string): string {
  return value.replace(/[\\,()=!<>~\s]/g, '\\$&');
}
