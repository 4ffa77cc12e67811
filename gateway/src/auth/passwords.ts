import type { TSchema } from '@sinclair/typebox';
import bcrypt from 'bcryptjs';
import { badRequest } from '../http/errors.js';

/**
 * Password hashing (bcrypt) and the password policy. A fixed dummy hash lets
 * login spend the same time on unknown e-mails as on known ones.
 */
export class Passwords {
  #dummy: Promise<string>;

  constructor(
    readonly minLength: number,
    readonly cost: number,
  ) {
    this.#dummy = bcrypt.hash('sluice-dummy-password', cost);
  }

  hash(password: string): Promise<string> {
    return bcrypt.hash(password, this.cost);
  }

  /** bcrypt's comparison runs in time independent of where the hashes differ. */
  async verify(password: string, hash: string | undefined): Promise<boolean> {
    const target = hash ?? (await this.#dummy);
    const ok = await bcrypt.compare(password, target);
    return ok && hash !== undefined;
  }

  /**
   * `schema` with the policy stated on its password `field`, for the OpenAPI
   * document: the length in characters as minLength (the bound that 72 bytes
   * of UTF-8 always allow as maxLength). The policy's answer stays the spec's
   * named 400, so validation keeps the plain schema and `check` answers; the
   * byte count and the e-mail rule are only in the description.
   */
  documented<T extends TSchema>(schema: T, field: string): T {
    const rule = {
      minLength: this.minLength,
      maxLength: 72,
      description: `At least ${this.minLength} characters, at most 72 bytes in UTF-8, not containing the e-mail address; otherwise the named 400 with its reason`,
    };
    const stated = (p: TSchema): TSchema =>
      p.anyOf
        ? { ...p, anyOf: (p.anyOf as TSchema[]).map((b) => (b.type === 'string' ? { ...b, ...rule } : b)) }
        : { ...p, ...rule };
    const props = schema.properties as Record<string, TSchema>;
    return { ...schema, properties: { ...props, [field]: stated(props[field] ?? ({} as TSchema)) } } as T;
  }

  /** Throws the spec's `{code, reason}` 400 when the password breaks the policy. */
  check(password: string, code: string, email?: string): void {
    if ([...password].length < this.minLength) {
      throw badRequest(code, `Password should be at least ${this.minLength} characters`);
    }
    // bcrypt reads 72 bytes: a longer password would be silently truncated.
    if (Buffer.byteLength(password, 'utf8') > 72)
      throw badRequest(code, 'Password should be at most 72 bytes');
    if (email && password.toLowerCase().includes(email.toLowerCase())) {
      throw badRequest(code, 'Password should not contain e-mail');
    }
  }
}
