import type { Socket } from 'node:net';

/** What a write to a connection the peer closed or reset fails with. */
const GONE = new Set(['EPIPE', 'ECONNRESET']);

/**
 * Nomad resets the exec connection when a command ends while input is still coming (it closes with
 * that input unread), just after the frames that say how the command ended. Node fails a socket's
 * reading at its first failed write, so a stdin write meeting that reset would lose those frames,
 * still unread in the kernel. Writes to the gone peer are taken as done here instead (input going
 * nowhere, as into an exited process's closed pipe), so the socket reads on to the frames, then to
 * the reset itself, which ends it as usual.
 */
export function ignoreWritesAfterReset(socket: Socket): void {
  const forgiving = (callback: (error?: Error | null) => void) => (error?: Error | null) =>
    callback(error !== undefined && error !== null && GONE.has((error as NodeJS.ErrnoException).code ?? '') ? null : error);
  const write = socket._write.bind(socket);
  socket._write = (chunk, encoding, callback) => write(chunk, encoding, forgiving(callback));
  const writev = socket._writev?.bind(socket);
  if (writev !== undefined) socket._writev = (chunks, callback) => writev(chunks, forgiving(callback));
}
