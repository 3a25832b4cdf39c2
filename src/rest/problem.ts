/** REST error and JSON responses: the shared HTTP error mapping lives in errors/http.ts. */
export { rejectUpgrade, sendJson, sendProblem, toProblem, type Problem } from '../errors/http.js';
