/** A Kubernetes `Status` failure body, as the API server returns with 4xx/5xx answers. */
export interface KubeStatus {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure';
  message: string;
  reason: string;
  details?: StatusDetails;
  code: number;
}

/** metav1.StatusDetails: what the failure is about, and for a 422 the fields at fault. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: { reason: string; message: string; field: string }[];
}

export class KubeApiError extends Error {
  readonly status: KubeStatus;

  constructor(code: number, reason: string, message: string, details?: StatusDetails) {
    super(message);
    this.status = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason,
      code,
      ...(details === undefined ? {} : { details }),
    };
  }
}

export const notFound = (resource: string, name: string): KubeApiError =>
  new KubeApiError(404, 'NotFound', `${resource} "${name}" not found`, { name, kind: resource });
export const alreadyExists = (resource: string, name: string): KubeApiError =>
  new KubeApiError(409, 'AlreadyExists', `${resource} "${name}" already exists`, { name, kind: resource });
export const conflict = (resource: string, name: string): KubeApiError =>
  new KubeApiError(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    { name, kind: resource },
  );
export const invalid = (resource: string, name: string, why: string): KubeApiError =>
  new KubeApiError(422, 'Invalid', `${resource} "${name}" is invalid: ${why}`, { name, kind: resource });
export const forbidden = (resource: string, name: string, why: string): KubeApiError =>
  new KubeApiError(403, 'Forbidden', `${resource} "${name}" is forbidden: ${why}`, { name, kind: resource });
export const badRequest = (message: string): KubeApiError => new KubeApiError(400, 'BadRequest', message);
