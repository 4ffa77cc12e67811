import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

// What the README's walkthroughs tell a new user to paste, read from the
// README itself so that the tests of those sections fail when the README's
// text stops working: a section's pipeline body (its `$API/pipelines/`
// heredoc) with the shell's variables substituted, and the SQL it runs with
// `mariadb … -e "…"`.

export const REPO_ROOT = resolve(import.meta.dirname, '../..');

/** The README's section under the heading that starts with `heading` (up to the next `## `). */
export function readmeSection(heading: string): string {
  const readme = readFileSync(resolve(REPO_ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf(`## ${heading}`);
  if (at < 0) throw new Error(`README.md has no section "${heading}"`);
  const end = readme.indexOf('\n## ', at + 3);
  return readme.slice(at, end < 0 ? undefined : end);
}

/** `$NAME` of `text` replaced from `vars`; a variable the test does not set fails. */
export function substitute(text: string, vars: Record<string, string>): string {
  return text.replace(/\$([A-Z_][A-Z0-9_]*)/g, (_, name: string) => {
    if (!(name in vars)) throw new Error(`README.md uses $${name}, which the test does not set`);
    return vars[name]!;
  });
}

/** The section's pipeline body, with `$NAME` replaced from `vars`. */
export function readmePipelineBody(heading: string, vars: Record<string, string>): Record<string, unknown> {
  const match = /\$API\/pipelines\/ <<JSON[^\n]*\n([\s\S]*?)\nJSON\n/.exec(readmeSection(heading));
  if (!match) throw new Error(`README.md: the pipeline heredoc of "${heading}" was not found`);
  return JSON.parse(substitute(match[1]!, vars)) as Record<string, unknown>;
}

/** The SQL of each `mariadb … -e "…"` command of the section, in order. */
export function readmeMariadbSql(heading: string): string[] {
  return [...readmeSection(heading).matchAll(/\nmariadb [^\n]* -e "([^"]*)"/g)].map((m) => m[1]!.trim());
}
