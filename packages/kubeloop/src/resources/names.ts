/**
 * Name checks the API server applies (apimachinery's `validation.IsQualifiedName`), done up front
 * so a bad finalizer or controller name fails where it is written rather than on every write.
 */

const NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const MAX_NAME_PART = 63;
const MAX_PREFIX = 253;

/** `name` or `prefix/name`: a name part of ≤ 63 alphanumerics, `-`, `_`, `.`; a DNS-subdomain prefix. */
export function isQualifiedName(value: string): boolean {
  const slash = value.indexOf("/");
  const prefix = slash === -1 ? undefined : value.slice(0, slash);
  const name = slash === -1 ? value : value.slice(slash + 1);
  if (prefix !== undefined && (prefix.length > MAX_PREFIX || !DNS_SUBDOMAIN.test(prefix))) return false;
  return name.length <= MAX_NAME_PART && NAME_PART.test(name);
}
