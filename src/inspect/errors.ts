export class InspectorServerError extends Error {
  override name = 'InspectorServerError';
  readonly code = 'WARDEN_INSPECTOR';
}
