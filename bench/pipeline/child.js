// Runs one measurement in a child process of its own (its own JIT, memory and
// peak RSS, as a worker has) that prints its result as one JSON line last.
import { spawn } from 'node:child_process';

/** Resolves with the child's last stdout line parsed; rejects with its last output lines when it fails. */
export const runJsonChild = (script, args, { label, timeoutMs = 300_000 }) =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (b) => (out += b));
    child.stderr.on('data', (b) => (err += b));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      const line = out.trim().split('\n').pop();
      if (code === 0 && line) return resolve(JSON.parse(line));
      const tail = (err || out).trim().split('\n').slice(-4).join(' | ');
      reject(new Error(`${label} exited with ${code}: ${tail}`));
    });
  });
