/**
 * `npm start` (`node dist/cli.js`): starts the gateway with configuration from the environment
 * and flags (docs/API.md §1, §10 "Command line", "Shutdown").
 *
 *   exit 0  stopped by SIGTERM/SIGINT after a graceful shutdown
 *   exit 1  the start failed (one line on stderr naming the cause and the address)
 *   exit 2  a bad flag or value (one line on stderr)
 *   128+n   a second signal n during the shutdown: stopped at once
 */

// graphql-js runs extra cross-realm checks on every type test unless NODE_ENV is production;
// set it before graphql is first imported (hence the dynamic imports below).
process.env.NODE_ENV ??= 'production';

const { ConfigError, helpText, loadConfig, wantsHelp } = await import('./config.js');

const fail = (code: number, message: string): never => {
  process.stderr.write(`svc gateway: ${message}\n`);
  process.exit(code);
};

if (wantsHelp()) {
  process.stdout.write(helpText());
  process.exit(0);
}

// The process entry point: its top-level variables are the one gateway this process runs.
let config: ReturnType<typeof loadConfig>;
try {
  config = loadConfig();
} catch (e) {
  fail(e instanceof ConfigError ? 2 : 1, (e as Error).message);
}

const SIGNAL_NUMBERS: Partial<Record<NodeJS.Signals, number>> = { SIGINT: 2, SIGTERM: 15 };
// A signal during the start: nothing is served yet, so nothing to drain; stop at once.
const early = (signal: NodeJS.Signals) => {
  process.stderr.write(`svc gateway: ${signal} while starting, stopping\n`);
  process.exit(128 + (SIGNAL_NUMBERS[signal] ?? 1));
};
process.on('SIGTERM', early);
process.on('SIGINT', early);

const { startGateway, StartError, SHUTDOWN_GRACE_MS } = await import('./server.js');

let gateway: Awaited<ReturnType<typeof startGateway>>;
try {
  gateway = await startGateway(config!, {
    // Printed the moment the password is valid, before anything else can fail, and again at
    // every start until it is changed (docs/API.md §10). Only here: never in a log line.
    onAdminPassword: (username, password, generatedNow) => {
      process.stdout.write(
        `svc gateway: generated password for "${username}": ${password}\n` +
          `svc gateway: (${generatedNow ? 'generated now' : 'generated at an earlier start'}; shown at every start until it is changed)\n`,
      );
    },
  });
} catch (e) {
  const message = e instanceof StartError ? e.message : `cannot start: ${(e instanceof Error ? e.message : String(e)).split('\n')[0]}`;
  fail(1, message);
}
process.off('SIGTERM', early);
process.off('SIGINT', early);

let first: { signal: NodeJS.Signals; at: number } | undefined;
/**
 * Run by `npm start`, the gateway gets a Ctrl-C (SIGINT to the whole process group) twice: from
 * the terminal, and again as npm forwards its own copy. A repeat of the same signal this soon is
 * that echo, not an operator's second signal.
 */
const ECHO_MS = process.env.npm_lifecycle_event === 'start' ? 300 : 0;

const onSignal = (signal: NodeJS.Signals) => {
  if (first) {
    if (signal === first.signal && Date.now() - first.at < ECHO_MS) return;
    process.stderr.write(`svc gateway: ${signal} again, stopping at once\n`);
    process.exit(128 + (SIGNAL_NUMBERS[signal] ?? 1));
  }
  first = { signal, at: Date.now() };
  process.stderr.write(`svc gateway: ${signal}, shutting down (up to ${SHUTDOWN_GRACE_MS / 1000} s; ${signal} again stops at once)\n`);
  // Closing the store or a plugin's stop could hang (a stalled database): the process still ends.
  setTimeout(() => fail(1, 'shutdown did not finish in time, stopping'), SHUTDOWN_GRACE_MS + 5000).unref();
  gateway.shutdown(SHUTDOWN_GRACE_MS).then(
    () => process.exit(0),
    (e: unknown) => fail(1, `shutdown failed: ${(e instanceof Error ? e.message : String(e)).split('\n')[0]}`),
  );
};
process.on('SIGTERM', onSignal);
process.on('SIGINT', onSignal);
