/**
 * The page's connection to the inspector: the WebSocket on the page's own origin, the follow
 * request for the shown allocation's timeline (sent again after a reconnection, which starts
 * afresh), and reconnection on request, on focus and when the network comes back.
 */
import type { FollowRequest, LiveMessage } from '../schema.js';

export interface LiveHandlers {
  message(message: LiveMessage): void;
  /** The connection opened (true) or was lost (false). */
  connected(open: boolean): void;
}

export interface Live {
  follow(allocationId: string | null): void;
  reconnect(): void;
}

export function connectLive(handlers: LiveHandlers): Live {
  let socket: WebSocket | undefined;
  let following: string | null = null;
  const sendFollow = (): void => {
    const request: FollowRequest = { type: 'follow', allocationId: following };
    if (socket?.readyState === WebSocket.OPEN) socket.send(JSON.stringify(request));
  };
  const connect = (): void => {
    if (socket !== undefined && (socket.readyState === WebSocket.CONNECTING || socket.readyState === WebSocket.OPEN)) return;
    const opened = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/api/live`);
    socket = opened;
    opened.addEventListener('open', () => {
      handlers.connected(true);
      if (following !== null) sendFollow();
    });
    opened.addEventListener('message', (event: MessageEvent<string>) => {
      let message: LiveMessage;
      try {
        message = JSON.parse(event.data) as LiveMessage;
      } catch (error) {
        console.error('inspector: unreadable message', error);
        return;
      }
      handlers.message(message);
    });
    opened.addEventListener('close', () => handlers.connected(false));
  };
  window.addEventListener('focus', connect);
  window.addEventListener('online', connect);
  connect();
  return {
    follow: (allocationId) => {
      if (allocationId === following) return;
      following = allocationId;
      sendFollow();
    },
    reconnect: connect,
  };
}
