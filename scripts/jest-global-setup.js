// Fails fast with a clear message when the suite runs on the wrong Node.js:
// `make test` always provides Node 24 (scripts/node24.sh).
export default function globalSetup() {
  const major = Number(process.versions.node.split('.')[0]);
  if (major !== 24) {
    throw new Error(
      `Sluice tests need Node.js 24 LTS, this is ${process.version}: run them with \`make test\``,
    );
  }
}
