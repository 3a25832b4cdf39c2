/**
 * The benchmark data set and the measured requests.
 *
 * Object i (0-based) of the Person model, with n = i % 250 and h = ⌊i / 250⌋ % 2:
 *   metadata.name   person-<i, 6 digits>
 *   spec.name       NAMES[n]                 250 names: each matches 0.4 % of the objects
 *   labels          people.example.com/team = team-<(n + 5h) % 10>   (10 teams, 10 % each)
 *                   people.example.com/tier = tier-<i % 3>
 *
 * Each name is spread over two teams, so the measured selector pair (a name and the first of
 * its teams) matches 0.2 % of the objects: 2 at 1,000 and 200 at 100,000, where the name alone
 * matches 400 and the team alone 10,000. The number of matches grows with the data (as it
 * would in real use) but stays small, so an index-served list has little to count, sort and
 * return: a page of 20 (full at 100k; 2 items at 1k). The pattern repeats every 500 objects,
 * so every multiple of 500 has exact proportions.
 */
export const GROUP = 'people.example.com';
export const VERSION = 'v1alpha1';
export const PLURAL = 'persons';
export const COLLECTION_PATH = `/apis/${GROUP}/${VERSION}/${PLURAL}`;
export const TEAM_LABEL = `${GROUP}/team`;

const FIRST = ['Ada', 'Alan', 'Barbara', 'Donald', 'Edsger', 'Frances', 'Grace', 'John', 'Margaret', 'Niklaus'];
const LAST = [
  'Allen', 'Backus', 'Cerf', 'Dijkstra', 'Engelbart', 'Floyd', 'Gray', 'Hamilton', 'Hoare', 'Hopper', 'Iverson', 'Kahn',
  'Kay', 'Knuth', 'Lamport', 'Liskov', 'Lovelace', 'McCarthy', 'Naur', 'Perlis', 'Ritchie', 'Sammet', 'Thompson', 'Turing', 'Wirth',
];
/** 250 distinct spec.name values (no spaces or selector-reserved characters, so no escaping). */
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
export const LIST_QUERIES: ListQuery[] = [0, 62, 125, 187, 249].map((n) => ({ name: NAMES[n]!, team: teamOf(n) }));

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
/** The same get selecting one field (bench/cpu-pair.ts `gql-field`). */
export const GQL_GET_KIND = 'query Get($name: String!) { peopleExampleCom_v1alpha1_person(name: $name) { kind } }';

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
