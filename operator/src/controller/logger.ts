/** The logging the operator needs (pino's shape), so any pino logger fits. */
export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

/** For tests and tools that want silence. */
export const silentLogger: Logger = { info() {}, warn() {}, error() {}, debug() {} };
