/**
 * AWS Signature Version 4 verification for the embedded endpoints. The received request is
 * re-signed with the stored secret by `@smithy/signature-v4` (the SDK's own signer), over
 * exactly the headers the client listed in `SignedHeaders`, the client's `x-amz-date` and
 * credential scope, and the SHA-256 of the body actually received; the result must equal the
 * client's signature. Nothing the client claims (payload hash, scope) is trusted unchecked.
 */
import { createHash, createHmac, createSecretKey, timingSafeEqual, type KeyObject } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { SignatureV4 } from "@smithy/signature-v4";

export interface AwsCredential {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** Who holds the key: what policies, logs and `SenderId` name. */
  readonly principal: string;
  /** Required on every request signed with this key when set (temporary credentials). */
  readonly sessionToken?: string;
  /**
   * The principal's tags: in every request's context as `aws:PrincipalTag/<key>`, for conditions
   * and `${aws:PrincipalTag/<key>}` policy variables, as IAM puts a role's tags there.
   * @default none
   */
  readonly tags?: Readonly<Record<string, string>>;
}

/**
 * A request's context: the keys its service derived from the request, and the ones the
 * credential brings (its principal tags). Global `aws:` keys are AWS's to set, never the
 * request's, so only the credential's reach the policy.
 */
export function requestContext(
  fromRequest: Readonly<Record<string, readonly string[]>>,
  credential: AwsCredential,
): Record<string, readonly string[]> {
  const context = Object.fromEntries(Object.entries(fromRequest).filter(([key]) => !key.startsWith("aws:")));
  for (const [key, value] of Object.entries(credential.tags ?? {}))
    context[`aws:PrincipalTag/${key}`] = [value];
  return context;
}

export const AuthFailure = {
  MissingToken: "MissingToken",
  IncompleteSignature: "IncompleteSignature",
  UnknownAccessKey: "UnknownAccessKey",
  SignatureMismatch: "SignatureMismatch",
  Expired: "Expired",
} as const;
export type AuthFailure = (typeof AuthFailure)[keyof typeof AuthFailure];

export type SignatureCheck =
  | { readonly ok: true; readonly credential: AwsCredential }
  | { readonly ok: false; readonly failure: AuthFailure; readonly message: string };

export interface ReceivedRequest {
  readonly method: string;
  /** Path and query string as received (`/`, `/000000000000/q?x=1`). */
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Uint8Array;
}

export interface VerifyOptions {
  /** By access key id: a map, or any book that can look a key up (one credentials may join later). */
  readonly credentials: Pick<ReadonlyMap<string, AwsCredential>, "get">;
  /** The signing name the credential scope must carry (`sqs`, `events`, `states`). */
  readonly service: string;
  /** When set, the scope's region must be this one. @default any region */
  readonly region?: string;
  readonly nowMs: number;
  /** AWS rejects requests dated more than 15 minutes off. @default 15 min */
  readonly maxClockSkewMs?: number;
}

export const SIGNATURE_MISMATCH_MESSAGE =
  "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.";
export const UNKNOWN_KEY_MESSAGE = "The security token included in the request is invalid.";

const ALGORITHM = "AWS4-HMAC-SHA256";
const AMZ_DATE = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/;
/** Headers that must be covered by the signature, else the request could be altered in transit. */
const REQUIRED_SIGNED = ["host", "x-amz-date"] as const;

export async function verifySigV4(request: ReceivedRequest, options: VerifyOptions): Promise<SignatureCheck> {
  const authorization = header(request.headers, "authorization");
  if (authorization === undefined) {
    return fail(AuthFailure.MissingToken, "Request is missing Authentication Token");
  }
  const parsed = parseAuthorization(authorization);
  if (typeof parsed === "string") return fail(AuthFailure.IncompleteSignature, parsed);
  const { accessKeyId, scopeDate, scopeRegion, scopeService, signedHeaders, signature } = parsed;

  const credential = options.credentials.get(accessKeyId);
  if (!credential) return fail(AuthFailure.UnknownAccessKey, UNKNOWN_KEY_MESSAGE);
  const token = header(request.headers, "x-amz-security-token");
  if (token !== (credential.sessionToken ?? undefined)) {
    return fail(AuthFailure.UnknownAccessKey, UNKNOWN_KEY_MESSAGE);
  }

  for (const name of REQUIRED_SIGNED) {
    if (!signedHeaders.includes(name)) {
      return fail(AuthFailure.SignatureMismatch, `'${name}' must be a signed header.`);
    }
  }
  if (header(request.headers, "x-amz-target") !== undefined && !signedHeaders.includes("x-amz-target")) {
    return fail(AuthFailure.SignatureMismatch, "'x-amz-target' must be a signed header.");
  }
  for (const name of signedHeaders) {
    if (header(request.headers, name) === undefined) {
      return fail(AuthFailure.SignatureMismatch, `Signed header '${name}' is not in the request.`);
    }
  }

  const amzDate = header(request.headers, "x-amz-date") ?? "";
  const signingDate = parseAmzDate(amzDate);
  if (!signingDate) {
    return fail(
      AuthFailure.IncompleteSignature,
      `X-Amz-Date '${amzDate}' is not of the form YYYYMMDD'T'HHMMSS'Z'.`,
    );
  }
  if (scopeDate !== amzDate.slice(0, 8)) {
    return fail(
      AuthFailure.SignatureMismatch,
      `Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '${scopeDate}' != '${amzDate.slice(0, 8)}', from '${amzDate}'.`,
    );
  }
  if (scopeService !== options.service) {
    return fail(
      AuthFailure.SignatureMismatch,
      `Credential should be scoped to correct service: '${options.service}'.`,
    );
  }
  if (options.region !== undefined && scopeRegion !== options.region) {
    return fail(
      AuthFailure.SignatureMismatch,
      `Credential should be scoped to a valid region, not '${scopeRegion}'. Expected '${options.region}'.`,
    );
  }
  const skewMs = options.maxClockSkewMs ?? 15 * 60_000;
  if (Math.abs(options.nowMs - signingDate.getTime()) > skewMs) {
    const earliest = amzDateOf(new Date(options.nowMs - skewMs));
    return fail(
      AuthFailure.Expired,
      signingDate.getTime() < options.nowMs
        ? `Signature expired: ${amzDate} is now earlier than ${earliest} (${amzDateOf(new Date(options.nowMs))} - ${skewMs / 60_000} min.)`
        : `Signature not yet current: ${amzDate} is still later than ${amzDateOf(new Date(options.nowMs + skewMs))} (${amzDateOf(new Date(options.nowMs))} + ${skewMs / 60_000} min.)`,
    );
  }

  const bodyHash = createHash("sha256").update(request.body).digest("hex");
  const claimedHash = header(request.headers, "x-amz-content-sha256");
  // The signer trusts this header as the payload hash; the body received must really have it.
  if (claimedHash !== undefined && claimedHash !== bodyHash) {
    return fail(
      AuthFailure.SignatureMismatch,
      "The provided 'x-amz-content-sha256' header does not match what was computed.",
    );
  }

  const url = new URL(request.url, "http://placeholder");
  const headers: Record<string, string> = {};
  for (const name of signedHeaders) headers[name] = header(request.headers, name) ?? "";
  const signed = await signerFor(credential, scopeRegion, scopeService).sign(
    {
      method: request.method,
      protocol: "http:",
      hostname: url.hostname,
      path: url.pathname,
      query: queryOf(url.searchParams),
      headers,
      body: request.body,
    },
    {
      signingDate,
      signingRegion: scopeRegion,
      signingService: scopeService,
      signableHeaders: new Set(signedHeaders),
    },
  );
  const expected = /Signature=([0-9a-f]+)/.exec(String(signed.headers["authorization"] ?? ""))?.[1] ?? "";
  const matches =
    expected.length === signature.length &&
    timingSafeEqual(Buffer.from(expected, "utf8"), Buffer.from(signature, "utf8"));
  return matches ? { ok: true, credential } : fail(AuthFailure.SignatureMismatch, SIGNATURE_MISMATCH_MESSAGE);
}

/**
 * Signs a request with `credential` as the SDK would: the headers it should carry, `host`,
 * `x-amz-date` and `authorization` among them. For a hop that passes on a request it has
 * already checked to a server that accepts one key only.
 */
export async function signRequest(
  request: {
    readonly url: URL;
    readonly method: string;
    readonly headers: Record<string, string>;
    readonly body: Uint8Array;
  },
  credential: Pick<AwsCredential, "accessKeyId" | "secretAccessKey">,
  region: string,
  service: string,
  signingDate?: Date,
): Promise<Record<string, string>> {
  const signer = signerFor({ ...credential, principal: "" }, region, service);
  const signed = await signer.sign(
    {
      method: request.method,
      protocol: request.url.protocol,
      hostname: request.url.hostname,
      ...(request.url.port ? { port: Number(request.url.port) } : {}),
      path: request.url.pathname,
      query: queryOf(request.url.searchParams),
      headers: { ...request.headers, host: request.url.host },
      body: request.body,
    },
    signingDate ? { signingDate } : {},
  );
  return Object.fromEntries(Object.entries(signed.headers).map(([k, v]) => [k, String(v)]));
}

/**
 * One signer per key and scope, kept: a signer caches the signing key it derives for a day
 * (four HMACs), so a request does not derive it again. At most SIGNERS_KEPT are kept.
 */
const signers = new Map<string, SignatureV4>();
const SIGNERS_KEPT = 64;

function signerFor(credential: AwsCredential, region: string, service: string): SignatureV4 {
  const key = JSON.stringify([credential.accessKeyId, credential.secretAccessKey, region, service]);
  let signer = signers.get(key);
  if (signer === undefined) {
    if (signers.size >= SIGNERS_KEPT) signers.clear();
    signer = new SignatureV4({
      credentials: { accessKeyId: credential.accessKeyId, secretAccessKey: credential.secretAccessKey },
      region,
      service,
      sha256: NodeSha256,
      applyChecksum: false,
    });
    signers.set(key, signer);
  }
  return signer;
}

interface ParsedAuthorization {
  readonly accessKeyId: string;
  readonly scopeDate: string;
  readonly scopeRegion: string;
  readonly scopeService: string;
  readonly signedHeaders: readonly string[];
  readonly signature: string;
}

/** A string is the reason the header is malformed. */
export function parseAuthorization(value: string): ParsedAuthorization | string {
  const space = value.indexOf(" ");
  const algorithm = space < 0 ? value : value.slice(0, space);
  if (algorithm !== ALGORITHM)
    return `Unsupported AWS 'algorithm': '${algorithm}'; only ${ALGORITHM} is accepted.`;
  const fields = new Map<string, string>();
  for (const part of value.slice(space + 1).split(",")) {
    const eq = part.indexOf("=");
    if (eq > 0) fields.set(part.slice(0, eq).trim(), part.slice(eq + 1).trim());
  }
  for (const name of ["Credential", "SignedHeaders", "Signature"]) {
    if (!fields.get(name)) return `Authorization header requires '${name}' parameter. Authorization=${value}`;
  }
  const scope = fields.get("Credential")!.split("/");
  if (scope.length !== 5 || scope[4] !== "aws4_request" || scope.some((s) => s === "")) {
    return `Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, got '${fields.get("Credential")}'`;
  }
  const [accessKeyId, scopeDate, scopeRegion, scopeService] = scope as [string, string, string, string];
  const signature = fields.get("Signature")!;
  if (!/^[0-9a-f]{64}$/.test(signature)) return "Signature must be 64 lowercase hexadecimal characters.";
  return {
    accessKeyId,
    scopeDate,
    scopeRegion,
    scopeService,
    signedHeaders: fields
      .get("SignedHeaders")!
      .split(";")
      .map((h) => h.toLowerCase()),
    signature,
  };
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(",") : value;
}

function queryOf(params: URLSearchParams): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(params.keys())) {
    const values = params.getAll(key);
    query[key] = values.length === 1 ? values[0]! : values;
  }
  return query;
}

function parseAmzDate(value: string): Date | undefined {
  const m = AMZ_DATE.exec(value);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  const date = new Date(Date.UTC(y, mo - 1, d, h, mi, s));
  return Number.isNaN(date.getTime()) ? undefined : date;
}

export function amzDateOf(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}/, "");
}

function fail(failure: AuthFailure, message: string): SignatureCheck {
  return { ok: false, failure, message };
}

/** The hash the smithy signer expects: SHA-256, or HMAC-SHA-256 when given a key. */
class NodeSha256 {
  readonly #key: KeyObject | undefined;
  #hash: ReturnType<typeof createHash> | ReturnType<typeof createHmac>;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.#key = secret === undefined ? undefined : keyObjectOf(secret);
    this.#hash = this.#fresh();
  }
  update(data: Uint8Array): void {
    this.#hash.update(data);
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.#hash.digest()));
  }
  reset(): void {
    this.#hash = this.#fresh();
  }
  #fresh() {
    return this.#key === undefined ? createHash("sha256") : createHmac("sha256", this.#key);
  }
}

/**
 * The signer's keys as KeyObjects, kept: an HMAC keyed by a KeyObject costs about a third of one
 * keyed by bytes (Node checks and copies a raw key on every createHmac: 12.7 against 3.9 µs here),
 * and every request's check uses the same two keys again (the secret, for the signer's cache key,
 * and the day's signing key, the same Uint8Array from the signer's cache).
 */
const keysOfSecrets = new Map<string, KeyObject>();
const keysOfBytes = new WeakMap<object, KeyObject>();
const SECRETS_KEPT = 64;

function keyObjectOf(secret: string | ArrayBuffer | ArrayBufferView): KeyObject {
  if (typeof secret === "string") {
    let key = keysOfSecrets.get(secret);
    if (key === undefined) {
      if (keysOfSecrets.size >= SECRETS_KEPT) keysOfSecrets.clear();
      key = createSecretKey(bytesOf(secret));
      keysOfSecrets.set(secret, key);
    }
    return key;
  }
  let key = keysOfBytes.get(secret);
  if (key === undefined) {
    key = createSecretKey(bytesOf(secret));
    keysOfBytes.set(secret, key);
  }
  return key;
}

function bytesOf(data: string | ArrayBuffer | ArrayBufferView): Uint8Array {
  if (typeof data === "string") return Buffer.from(data, "utf8");
  if (ArrayBuffer.isView(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return new Uint8Array(data);
}
