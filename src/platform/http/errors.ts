/**
 * The one error contract: handlers throw HttpError; app.onError renders `{error, code?}`.
 * Messages must never carry secrets or user-supplied text; name the field or bound instead.
 */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
    readonly extra?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = "HttpError";
  }
}

export const badRequest = (message: string) => new HttpError(400, message);
export const unauthorized = (message = "Unauthorized") => new HttpError(401, message);
export const forbidden = () => new HttpError(403, "Forbidden");
export const notFound = (message = "not found") => new HttpError(404, message);
export const conflict = (message: string) => new HttpError(409, message);
export const tooManyRequests = (message: string, retryAfterSeconds?: number) =>
  new HttpError(
    429,
    message,
    undefined,
    undefined,
    retryAfterSeconds !== undefined ? { "Retry-After": String(Math.max(1, Math.ceil(retryAfterSeconds))) } : undefined,
  );
export const notConfigured = (feature: string, message: string) => new HttpError(501, message, `${feature}-not-configured`);
export const unavailable = (message: string) => new HttpError(503, message);
