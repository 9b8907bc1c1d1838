/**
 * Writes the nkeys deploy/nats/nats-server.conf needs: `npm run nats-credentials -- DIR`.
 *
 *   DIR/hub.env         the public keys, as the hub's environment (PERFWATCH_GATEWAY_NKEY, …)
 *   DIR/gateway.nk      the gateways' seed (NATS_NKEY_SEED_FILE)
 *   DIR/agent-<loc>.nk  a location's agents' seed (NATS_NKEY_SEED_FILE)
 *   DIR/leaf-<loc>.nk   a location's leaf-node seed (PERFWATCH_LEAF_SEED of leafnode-region.conf)
 *
 * Every location gets keys, served or not: the hub's configuration names them all, and an
 * unserved location's seeds can simply be deleted. Existing files are never overwritten, so a
 * second run cannot silently rotate keys already handed out.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createUser } from '@nats-io/nkeys';
import { LOCATIONS } from '@perfwatch/common';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: npm run nats-credentials -- DIR');
  process.exit(2);
}

await mkdir(dir, { recursive: true, mode: 0o700 });
const roles = [
  { file: 'gateway.nk', variable: 'PERFWATCH_GATEWAY_NKEY' },
  ...LOCATIONS.flatMap((location) => [
    { file: `agent-${location}.nk`, variable: `PERFWATCH_AGENT_${location.toUpperCase()}_NKEY` },
    { file: `leaf-${location}.nk`, variable: `PERFWATCH_LEAF_${location.toUpperCase()}_NKEY` },
  ]),
];
const env: string[] = [];
try {
  for (const { file, variable } of roles) {
    const user = createUser();
    await writeFile(join(dir, file), `${new TextDecoder().decode(user.getSeed())}\n`, { mode: 0o600, flag: 'wx' });
    env.push(`${variable}=${user.getPublicKey()}`);
  }
  await writeFile(join(dir, 'hub.env'), `${env.join('\n')}\n`, { flag: 'wx' });
} catch (error) {
  if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  console.error(
    `nats-credentials: ${(error as NodeJS.ErrnoException).path} exists; keys are never overwritten, choose an empty directory`,
  );
  process.exit(1);
}
console.log(`nats-credentials: wrote ${roles.length} seeds and hub.env to ${dir}`);
