/**
 * Raised when an object or an argument breaks the API's validation rules
 * (HTTP 422 Invalid, or 400 for a malformed selector, in Kubernetes): an
 * unknown kind, a name that is not DNS-1123, a label that is not a label, a
 * finalizer added to an object being deleted.
 */
export class InvalidError extends Error {
  override readonly name = 'InvalidError';
}
