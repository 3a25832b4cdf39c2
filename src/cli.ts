/** `npm start`: starts the gateway with configuration from the environment and flags. */

// graphql-js runs extra cross-realm checks on every type test unless NODE_ENV is production;
// set it before graphql is first imported (hence the dynamic imports below).
process.env.NODE_ENV ??= 'production';

const { loadConfig } = await import('./config.js');
const { startGateway } = await import('./server.js');

const gateway = await startGateway(loadConfig());
if (gateway.generatedPassword) {
  // Printed once, on stdout, so the operator can log in (CONTRACT §1).
  console.log(`svc gateway: generated password for "${gateway.adminUsername}": ${gateway.adminPassword}`);
}
const shutdown = () => {
  gateway.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.once('SIGINT', shutdown);
process.once('SIGTERM', shutdown);
