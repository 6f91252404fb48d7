import { channel } from 'node:diagnostics_channel';

/**
 * Bytes moved by exec sessions, on a diagnostics channel (as undici reports its requests): whoever
 * subscribes (Warden's metrics) hears of every chunk of stdin, stdout and stderr; nobody pays for
 * it otherwise.
 */
export const EXEC_BYTES_CHANNEL = 'warden:exec:bytes';

export interface ExecBytesMessage {
  readonly stream: 'stdin' | 'stdout' | 'stderr';
  readonly bytes: number;
}

const execBytes = channel(EXEC_BYTES_CHANNEL);

export function publishExecBytes(stream: ExecBytesMessage['stream'], bytes: number): void {
  if (execBytes.hasSubscribers) execBytes.publish({ stream, bytes } satisfies ExecBytesMessage);
}
