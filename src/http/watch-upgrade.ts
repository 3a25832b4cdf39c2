/**
 * REST watch over WebSocket, after the pipeline authenticated and authorized the upgrade: the
 * single call site of the watch code for upgrades (http/pipeline.ts calls `upgradeWatch`, which
 * lives with the other watch transports in rest/watch-stream.ts).
 */
export { upgradeWatch } from '../rest/watch-stream.js';
