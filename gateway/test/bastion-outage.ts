import { expect } from '@jest/globals';
import type { Bastion } from '@sluice/testing/sshd';

/**
 * Calls `call` with the bastion stopped, expecting the answer a user gets
 * from a tunnelled connection then: 502 naming the bastion that refused
 * (never a direct connection to the database); the bastion is started again.
 */
export async function expectBastionRefusal(
  bastion: Bastion,
  call: () => Promise<{ status: number; body: unknown }>,
): Promise<void> {
  await bastion.stop();
  try {
    const down = await call();
    expect(down.status).toBe(502);
    expect(down.body).toEqual({
      detail: expect.stringMatching(
        new RegExp(
          `Connection refused by SSH bastion 127\\.0\\.0\\.1:${bastion.port}: nothing listens there`,
        ),
      ),
    });
  } finally {
    await bastion.start();
  }
}
