/**
 * The benchmark data set and the measured requests.
 *
 * Object i (0-based) of the Person model:
 *   metadata.name   person-<i, 6 digits>
 *   spec.name       NAMES[i % 25]                     25 names → each matches 4 % of the objects
 *   labels          people.example.com/team = team-<(n + 5·h) % 10>, n = i % 25, h = ⌊i/25⌋ % 2
 *                   people.example.com/tier = tier-<i % 3>
 *
 * Each name is spread over two teams, each team holds 10 % of the objects, and a (name, its
 * first team) pair selects exactly 2 % of them: 20 objects at 1,000 (a full page of 20) and
 * 2,000 at 100,000. So the measured page is full at every size ≥ 1,000 while the number of
 * matches grows with the data, which is what an index-served list must be insensitive to.
 * The pattern repeats every 50 objects, so every prefix of 50·k objects has exact proportions.
 */
export const GROUP = 'people.example.com';
export const VERSION = 'v1alpha1';
export const PLURAL = 'persons';
export const COLLECTION_PATH = `/apis/${GROUP}/${VERSION}/${PLURAL}`;
export const TEAM_LABEL = `${GROUP}/team`;

const FIRST = ['Ada', 'Alan', 'Barbara', 'Edsger', 'Grace'];
const LAST = ['Hopper', 'Knuth', 'Lovelace', 'Turing', 'Wirth'];
/** 25 distinct spec.name values (no spaces or selector-reserved characters, so no escaping). */
export const NAMES = FIRST.flatMap((f) => LAST.map((l) => `${f}-${l}`));

export const objectName = (i: number) => `person-${String(i).padStart(6, '0')}`;
export const teamOf = (i: number) => `team-${((i % NAMES.length) + 5 * (Math.floor(i / NAMES.length) % 2)) % 10}`;

export function personBody(i: number): Record<string, unknown> {
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'Person',
    metadata: {
      name: objectName(i),
      labels: { [TEAM_LABEL]: teamOf(i), [`${GROUP}/tier`]: `tier-${i % 3}` },
    },
    spec: { name: NAMES[i % NAMES.length], age: i % 90, gender: i % 2 ? 'FEMALE' : 'MALE' },
  };
}

/** One selector pair of the measured list request. */
export interface ListQuery {
  name: string;
  team: string;
}

/**
 * The list requests rotated through during a run: names from the start, middle and end of
 * the alphabet (the sort is on spec.name, so where the matches sit in the sort order matters),
 * each with the first team it is spread over.
 */
export const LIST_QUERIES: ListQuery[] = [0, 6, 12, 18, 24].map((n) => ({ name: NAMES[n]!, team: teamOf(n) }));

export interface ListRequestOptions {
  page: number;
  pageSize: number;
}

/** REST query string of the measured list request (identical for the gateway and the baseline). */
export function listPath(q: ListQuery, o: ListRequestOptions): string {
  const params = new URLSearchParams();
  params.append('fieldSelector', `spec.name=${q.name}`);
  params.append('labelSelector', `${TEAM_LABEL}=${q.team}`);
  params.append('sort', 'spec.name,asc');
  params.append('size', String(o.pageSize));
  params.append('page', String(o.page));
  return `${COLLECTION_PATH}?${params.toString()}`;
}

/** Every field of a stored Person (the seeded objects have no otherPerson and no status). */
const PERSON_FIELDS =
  'apiVersion kind metadata { name generateName labels annotations finalizers version creationTimestamp deletionTimestamp } ' +
  'spec { name age gender } status { phase }';

export const GQL_GET = `query Get($name: String!) { peopleExampleCom_v1alpha1_person(name: $name) { ${PERSON_FIELDS} } }`;

export const GQL_LIST =
  'query List($fs: [String!], $ls: [String!], $sort: [String!], $page: Int, $size: Int) { ' +
  'peopleExampleCom_v1alpha1_persons(fieldSelector: $fs, labelSelector: $ls, sort: $sort, page: $page, size: $size) { ' +
  `page size total totalPages first last hasNext hasPrevious resourceVersion items { ${PERSON_FIELDS} } } }`;

export function gqlListBody(q: ListQuery, o: ListRequestOptions): string {
  return JSON.stringify({
    query: GQL_LIST,
    variables: { fs: [`spec.name=${q.name}`], ls: [`${TEAM_LABEL}=${q.team}`], sort: ['spec.name,asc'], page: o.page, size: o.pageSize },
  });
}

export const gqlGetBody = (name: string): string => JSON.stringify({ query: GQL_GET, variables: { name } });

/** Deterministic pseudo-random object indexes for get-by-name (same sequence every run). */
export function* objectIndexes(count: number, seed = 12345): Generator<number> {
  let x = seed >>> 0 || 1;
  for (;;) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    yield x % count;
  }
}
