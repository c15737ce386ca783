import type { KubeObject } from "../client/index.js";

// What a webhook is asked and answers: the admission request, the defaulter, the validator, the converters.

/** What the API server asks an admission webhook: the operation, the object (and the old one on an update), and who asks. */
export interface AdmissionRequest<T extends KubeObject = KubeObject> {
  uid: string;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  operation: "CREATE" | "UPDATE" | "DELETE" | "CONNECT";
  namespace?: string;
  name?: string;
  object?: T;
  oldObject?: T;
  dryRun?: boolean;
  userInfo: { username: string; groups?: string[] };
}

/** A validator's answer: allowed (with warnings for the user, if any), or refused with a message. */
export type ValidationResult =
  | { allowed: true; warnings?: string[] }
  | { allowed: false; message: string; warnings?: string[] };

// biome-ignore lint/suspicious/noConfusingVoidType: a defaulter that edits in place returns nothing.
type DefaulterReturn<T0> = T0 | undefined | void;
/** Changes the object in place (or returns a new one); the difference becomes the patch. */
export type Defaulter<T extends KubeObject> = (
  object: T,
  request: AdmissionRequest<T>,
) => DefaulterReturn<T> | Promise<DefaulterReturn<T>>;
/** Says whether the write is allowed; refusing returns a message the user sees. */
export type Validator<T extends KubeObject> = (
  object: T,
  request: AdmissionRequest<T>,
) => ValidationResult | Promise<ValidationResult>;

/** Conversion between a kind's versions through a hub version (controller-runtime's hub and spokes). */
export interface Converters {
  /** The version every other one converts through, e.g. `v1`. */
  hub: string;
  /** version → (object of that version) → object of the hub version. */
  toHub: Record<string, (object: KubeObject) => KubeObject>;
  /** version → (hub object) → object of that version. */
  fromHub: Record<string, (object: KubeObject) => KubeObject>;
}
