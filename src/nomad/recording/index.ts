/** Recording what Warden reads from a cluster, and playing it back on a VirtualClock. */
export {
  RECORDING_FORMAT,
  RECORDING_VERSION,
  TrafficRecordingError,
  parseTrafficRecording,
  readTrafficRecording,
  type RecordingEntry,
  type RecordingHeader,
  type TrafficRecording,
} from './format.js';
export { TrafficRecorder, recordToFile, type TrafficRecorderOptions } from './recorder.js';
export { ReplayWire } from './replayWire.js';
export { driveReplay, type DriveReplayOptions } from './drive.js';
