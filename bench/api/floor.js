// The floor of the API benchmark: a bare node:http server that answers the
// gateway's own response bodies, byte for byte, with no routing, auth or
// database. Run as a child process by run.js (so it does not share an event
// loop with autocannon): it receives { bodies: { [url]: string } } over IPC,
// listens on a free 127.0.0.1 port and reports { port } back.
import { createServer } from 'node:http';

const start = (bodies) => {
  const answers = new Map(Object.entries(bodies).map(([url, body]) => [url, Buffer.from(body, 'utf8')]));
  const server = createServer((req, res) => {
    const body = answers.get(req.url);
    if (!body) {
      res.writeHead(404, { 'Content-Type': 'application/json' });
      res.end('{"detail":"Not Found"}');
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length });
    res.end(body);
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
};

process.once('message', (msg) => start(msg.bodies));
process.on('disconnect', () => process.exit(0));
