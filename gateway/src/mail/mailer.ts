import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { createTransport, type Transporter } from 'nodemailer';
import type { Logger } from 'pino';

export interface Mail {
  to: string;
  subject: string;
  text: string;
  /** The one-time token the mail carries (reset, verification). */
  token: string;
}

export interface Mailer {
  send(mail: Mail): Promise<void>;
}

/**
 * Without SMTP_URL, mails are files: `<dataDir>/outbox/<time>-<id>.json`
 * holding `{to, subject, text, token}`. The log says where, never the token.
 */
export class OutboxMailer implements Mailer {
  constructor(
    readonly dir: string,
    private readonly log: Logger,
  ) {}

  async send(mail: Mail): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const path = join(this.dir, `${new Date().toISOString().replace(/[:.]/g, '-')}-${randomUUID()}.json`);
    await writeFile(path, JSON.stringify(mail, null, 2) + '\n', { mode: 0o600 });
    this.log.info({ path, subject: mail.subject }, 'Mail written to the outbox');
  }
}

export class SmtpMailer implements Mailer {
  readonly #transport: Transporter;

  constructor(
    url: string,
    private readonly from: string,
    private readonly log: Logger,
  ) {
    this.#transport = createTransport(url);
  }

  async send(mail: Mail): Promise<void> {
    await this.#transport.sendMail({ from: this.from, to: mail.to, subject: mail.subject, text: mail.text });
    this.log.info({ subject: mail.subject }, 'Mail sent');
  }
}

export function createMailer(opts: { smtpUrl?: string; from: string; dataDir: string; log: Logger }): Mailer {
  return opts.smtpUrl
    ? new SmtpMailer(opts.smtpUrl, opts.from, opts.log)
    : new OutboxMailer(join(opts.dataDir, 'outbox'), opts.log);
}
