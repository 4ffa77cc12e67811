import { generate } from 'selfsigned';

// A self-signed certificate for 127.0.0.1 and localhost, made in-process for
// the TLS stand-ins of the tests (a warehouse's REST API, a kubelet's log
// endpoint): one per common name and test process.

const made = new Map<string, Promise<{ key: string; cert: string }>>();

export function localCertificate(commonName: string): Promise<{ key: string; cert: string }> {
  let certificate = made.get(commonName);
  if (!certificate) {
    certificate = generate([{ name: 'commonName', value: commonName }], {
      keySize: 2048,
      algorithm: 'sha256',
      extensions: [
        { name: 'basicConstraints', cA: true },
        {
          name: 'subjectAltName',
          altNames: [
            { type: 7, ip: '127.0.0.1' },
            { type: 2, value: 'localhost' },
          ],
        },
      ],
    }).then((p) => ({ key: p.private, cert: p.cert }));
    made.set(commonName, certificate);
  }
  return certificate;
}
