// The ceiling of the HTTP figures: a bare Fastify server with one JSON route, no logger, no hooks.
// Plain JavaScript, run by node itself, as agentd's compiled dist/ is.
import Fastify from 'fastify';

const app = Fastify();
app.get('/', async () => ({ hello: 'world' }));
const address = await app.listen({ host: '127.0.0.1', port: 0 });
console.log(`hello listening on ${address}`);
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
