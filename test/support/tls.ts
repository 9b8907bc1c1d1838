import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import selfsigned from 'selfsigned';

/**
 * A self-signed certificate for 127.0.0.1 and localhost, written to DIR/server.crt and
 * DIR/server.key. It is its own CA: clients trust it through NATS_TLS_CA_FILE=cert.
 */
export async function writeSelfSignedCert(dir: string): Promise<{ cert: string; key: string }> {
  const pems = selfsigned.generate([{ name: 'commonName', value: 'localhost' }], {
    days: 2,
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
  });
  const files = { cert: join(dir, 'server.crt'), key: join(dir, 'server.key') };
  await writeFile(files.cert, pems.cert);
  await writeFile(files.key, pems.private, { mode: 0o600 });
  return files;
}
