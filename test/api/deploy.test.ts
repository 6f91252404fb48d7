/** deploy/warden-serve.nomad.hcl: `warden serve` as one Nomad service with a health check on /api/v1/health. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { buildProgram } from '../../src/cli/main.js';
import { parseJobHcl } from '../../src/testing/nomad/hcl.js';

const hcl = readFileSync(join(__dirname, '..', '..', 'deploy', 'warden-serve.nomad.hcl'), 'utf8');

interface Task {
  Driver: string;
  Config: { command: string; args: string[] };
  Env: Record<string, string>;
  KillSignal: string;
  KillTimeout: number;
  Template: { Destination: string; Env: boolean; Data: string };
}

test('one `warden serve` on the static port Poseidon clients expect, its token from a Nomad variable, time to drain on SIGTERM', () => {
  const job = parseJobHcl(hcl) as { Type: string; TaskGroups: { Count: number; Update: { HealthCheck: string }; Tasks: Task[] }[] };
  expect(job.Type).toBe('service');
  const [group] = job.TaskGroups;
  expect(group?.Count).toBe(1);
  expect(group?.Update.HealthCheck).toBe('checks');
  const task = group!.Tasks[0]!;
  expect(task.Config.command).toBe('warden');
  expect(task.Config.args).toContain('serve');
  expect(task.Config.args).toContain('--listen=${NOMAD_ADDR_api}');
  expect(task.Env.NOMAD_ADDR).toBe('${NOMAD_UNIX_ADDR}');
  expect(task.KillSignal).toBe('SIGTERM');
  expect(task.KillTimeout).toBeGreaterThanOrEqual(10e9);
  expect(task.Template).toMatchObject({ Destination: 'secrets/serve.env', Env: true, Data: expect.stringContaining('WARDEN_SERVE_TOKEN=') });
  expect(hcl).toMatch(/port "api" \{\s*static = 7200\s*\}/);
  expect(hcl).toMatch(/service \{[\s\S]*provider = "nomad"[\s\S]*port {5}= "api"[\s\S]*check \{[\s\S]*type {5}= "http"[\s\S]*path {5}= "\/api\/v1\/health"/);
});

test('its arguments are ones `warden serve` takes', async () => {
  const job = parseJobHcl(hcl) as { TaskGroups: { Tasks: Task[] }[] };
  const args = job.TaskGroups[0]!.Tasks[0]!.Config.args.map((arg) => arg.replace('${NOMAD_ADDR_api}', '10.0.0.7:7200'));
  const argv = ['node', 'warden', ...args];
  const program = buildProgram('0.0.0');
  const serve = program.commands.find((command: Command) => command.name() === 'serve')!;
  let parsed: Record<string, unknown> | undefined;
  serve.action((options: Record<string, unknown>) => void (parsed = options));
  await program.parseAsync(argv);
  expect(parsed).toMatchObject({ listen: { host: '10.0.0.7', port: 7200 }, driver: 'docker', datacenter: ['dc1'] });
  expect(program.opts()).toMatchObject({ logFormat: 'json' });
});
