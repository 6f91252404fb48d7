/**
 * Where a server listens, as the command line writes it. Apart from the servers so that reading a
 * command line loads no node:http.
 */

/** Where to listen: `port`, `host:port` or `[ipv6]:port`; a bare flag means 127.0.0.1 and any free port. */
export interface ListenAddress {
  readonly host: string;
  readonly port: number;
}

export function parseListenAddress(text: string): ListenAddress {
  const match = /^(?:(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):)?(\d{1,5})$/.exec(text.trim());
  const port = Number(match?.[2]);
  if (match === null || port > 65_535) throw new RangeError(`expected [host:]port (port 0-65535; 0 picks a free one), got ${JSON.stringify(text)}`);
  return { host: (match[1] ?? '127.0.0.1').replace(/^\[(.*)\]$/, '$1'), port };
}
