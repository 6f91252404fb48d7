import type { InspectionEvent } from 'xstate';
import type { Clock } from '../clock/index.js';
import type { Supervisor } from '../supervisor/supervisor.js';
import { InspectionModel } from './model.js';
import { InspectorServer } from './server.js';

export interface StartInspectorOptions {
  clock: Clock;
  /** 0 (the default) picks a free port. */
  port?: number;
  /** Strings never to show: the Nomad token, Consul's. */
  secrets?: readonly (string | undefined)[];
}

/** A model and its server, for a supervisor created after it (the inspect hook must be given at creation). */
export interface Inspector {
  readonly model: InspectionModel;
  readonly server: InspectorServer;
  readonly url: string;
  /** Pass to createSupervisor({ inspect }). */
  readonly inspect: (event: InspectionEvent) => void;
  /** Follow this supervisor (once). */
  attach(supervisor: Supervisor): void;
  close(): Promise<void>;
}

/** Starts the server first, so its URL can be printed before the supervisor connects. */
export async function startInspector(options: StartInspectorOptions): Promise<Inspector> {
  const model = new InspectionModel({ clock: options.clock, ...(options.secrets ? { secrets: options.secrets } : {}) });
  const server = await InspectorServer.start({ model, ...(options.port === undefined ? {} : { port: options.port }) });
  let detach: (() => void) | undefined;
  return {
    model,
    server,
    url: server.url,
    inspect: model.inspect,
    attach: (supervisor) => {
      detach ??= model.attach(supervisor);
    },
    close: async () => {
      detach?.();
      await server.close();
    },
  };
}
