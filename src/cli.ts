/** `npm start`: starts the gateway with configuration from the environment and flags. */
import { loadConfig } from './config.js';
import { startGateway } from './server.js';

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
