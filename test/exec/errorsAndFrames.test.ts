/** Nomad's close codes and reasons (nomad-protocol §3.5) as typed errors; frames decoded strictly. */
import {
  ExecAllocationNotFoundError,
  ExecCommandStartError,
  ExecConnectionLostError,
  ExecError,
  ExecPermissionDeniedError,
  ExecTaskNotFoundError,
  errorFromClose,
  errorFromHttpStatus,
} from '../../src/nomad/exec/errors.js';
import { ExecFrameError, decodeClientFrame, decodeServerFrame, encodeServerFrame } from '../../src/nomad/exec/frames.js';

test.each([
  [1008, 'Unknown allocation "f0f0"', ExecAllocationNotFoundError],
  [1011, 'task not found', ExecTaskNotFoundError],
  [1008, 'unknown task name "web"', ExecTaskNotFoundError],
  [1008, 'task "main" not started yet.', ExecTaskNotFoundError],
  [1011, 'Permission denied', ExecPermissionDeniedError],
  [1011, 'rpc error: code = Unknown desc = failed to start command: fork/exec /etc/passwd: permission denied', ExecCommandStartError],
  [1008, 'command is not present', ExecCommandStartError],
  [1011, 'something new went wrong', ExecCommandStartError],
  [1008, 'something new was refused', ExecError],
  [1006, '', ExecConnectionLostError],
  [1000, '', ExecConnectionLostError],
] as const)('close %i %j before exited → %p', (code, reason, ErrorType) => {
  const error = errorFromClose(code, reason);
  expect(error).toBeInstanceOf(ErrorType);
  expect(error.name).toBe(ErrorType.name);
  expect(error).toMatchObject({ closeCode: code, reason });
  if (reason !== '') expect(error.message).toContain(reason);
});

test('an upgrade refused with an HTTP status (Nomad before 2.0.3) is typed by its body, else its status', () => {
  expect(errorFromHttpStatus(403, 'Permission denied')).toBeInstanceOf(ExecPermissionDeniedError);
  expect(errorFromHttpStatus(403, 'ACL token not found')).toBeInstanceOf(ExecPermissionDeniedError);
  expect(errorFromHttpStatus(500, 'failed to marshal command into json: EOF')).toBeInstanceOf(ExecCommandStartError);
  expect(errorFromHttpStatus(404, '')).toBeInstanceOf(ExecAllocationNotFoundError);
  expect(errorFromHttpStatus(502, 'bad gateway')).toMatchObject({ status: 502, reason: 'bad gateway' });
});

test('server frames: exit_code absent means 0, unknown keys are no-ops, malformed ones are errors', () => {
  expect(decodeServerFrame('{"exited":true,"result":{}}')).toEqual({ kind: 'exited', exitCode: 0 });
  expect(decodeServerFrame('{"exited":true,"result":{"exit_code":3}}')).toEqual({ kind: 'exited', exitCode: 3 });
  expect(decodeServerFrame('{"something":1}')).toEqual({ kind: 'noop' });
  for (const raw of ['', 'null', '[1]', '{"stdout":{"data":"%%%"}}', '{"stdout":7}', '{"exited":true,"result":{"exit_code":"3"}}']) {
    expect(() => decodeServerFrame(raw)).toThrow(ExecFrameError);
  }
  for (const frame of [{ kind: 'exited', exitCode: 0 }, { kind: 'exited', exitCode: 5 }, { kind: 'stderr', data: Buffer.from([0, 255, 10]) }] as const) {
    expect(decodeServerFrame(encodeServerFrame(frame))).toEqual(frame);
  }
});

test('client frames: heartbeat, stdin, tty_size; anything else is "unexpected message type"', () => {
  expect(decodeClientFrame('{}')).toEqual({ kind: 'heartbeat' });
  expect(decodeClientFrame('{"stdin":{"close":true}}')).toEqual({ kind: 'stdin.close' });
  expect(decodeClientFrame('{"tty_size":{"height":24,"width":80}}')).toEqual({ kind: 'tty_size', rows: 24, cols: 80 });
  expect(() => decodeClientFrame('{"setup":{}}')).toThrow('unexpected message type');
  expect(() => decodeClientFrame('{"tty_size":{"height":-1,"width":80}}')).toThrow(ExecFrameError);
});
