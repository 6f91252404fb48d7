/**
 * What failed in a Jest run, read from its `--json --outputFile` report and said in a few lines. The
 * live tier's runner prints it last: a CI log kept only in part (its head and its tail) still shows
 * why the run failed, not only that it did.
 */
import { existsSync, readFileSync } from 'node:fs';
import { stripVTControlCharacters } from 'node:util';

interface JestReport {
  readonly testResults: readonly {
    readonly name: string;
    readonly message?: string;
    readonly assertionResults: readonly { readonly fullName: string; readonly status: string; readonly failureMessages?: readonly string[] }[];
  }[];
}

/** Each failed test (or suite that failed to run) and the start of its message, `perMessage` characters at most. */
export function failuresIn(reportFile: string, perMessage = 3_000): string[] {
  if (!existsSync(reportFile)) return [];
  const report = JSON.parse(readFileSync(reportFile, 'utf8')) as JestReport;
  const shorten = (text: string): string => {
    // Jest's and Node's own stack frames say nothing of the failure.
    const plain = stripVTControlCharacters(text)
      .split('\n')
      .filter((line) => !/^\s*at .*(node_modules|node:internal|<anonymous>)/.test(line))
      .join('\n')
      .trim();
    return plain.length > perMessage ? `${plain.slice(0, perMessage)}…` : plain;
  };
  return report.testResults.flatMap((suite) => {
    const failed = suite.assertionResults.filter((test) => test.status === 'failed');
    if (failed.length === 0) return suite.message ? [`${suite.name}: ${shorten(suite.message)}`] : [];
    // Tests failing with the same message (a beforeAll that threw fails each test of its describe) are said once.
    const byMessage = new Map<string, string[]>();
    for (const test of failed) {
      const message = shorten((test.failureMessages ?? []).join('\n'));
      byMessage.set(message, [...(byMessage.get(message) ?? []), test.fullName]);
    }
    return [...byMessage].map(([message, names]) => `${suite.name}: ${names.join('; ')}\n${message}`);
  });
}
