import { Secret } from "kubeloop/k8s";
import { generatePassword, registerSecret, secretValues } from "kubeloop/resources";
import { DATABASE_LABEL, OPERATOR_NAME, type Pass } from "./names.ts";
import { ensureLoginRole } from "./postgres.ts";

/**
 * The app's credentials, with no moment when the Secret holds a login that does not work. The
 * app logs in as one of two login roles of the owner; rotating the password (a new
 * spec.passwordRotation) sets a fresh password on the *other* login first, and only then points
 * the Secret at it. The previous login keeps working for apps that have not reloaded the Secret
 * yet, until the next rotation. A restart between the two steps starts the rotation over: the
 * Secret never held the abandoned password. Returns the rotation to record, if one was done.
 */
export async function credentials({ db, ctx, names, admin, server }: Pass): Promise<string | undefined> {
  const existing = secretValues(
    ctx.cache.get({ type: Secret, namespace: ctx.namespace, name: names.credentialsSecret }) ?? {},
  );
  registerSecret(existing.password);
  const [first, second] = names.logins;
  const active = existing.username === second ? second : first;
  const requested = db.spec.passwordRotation ?? "";
  const rotate = existing.password !== undefined && requested !== (db.status?.passwordRotation ?? "");
  const login = rotate ? (active === first ? second : first) : active;
  // A login of another owner (the owner changed) gets the current password under the new names.
  const password = registerSecret(rotate ? generatePassword() : (existing.password ?? generatePassword()));
  const role = await admin((client) => ensureLoginRole(client, login, names.owner, password));
  // The Secret already named this login with this password: someone dropped the role.
  if (role === "created" && existing.username === login && existing.password === password)
    ctx.event("Warning", "DriftCorrected", `Login role "${login}" was missing on the server; recreated`);
  // Written once the role has the password: what the Secret holds always works.
  const uri = `postgresql://${encodeURIComponent(login)}:${encodeURIComponent(password)}@${server.host}:${server.port}/${encodeURIComponent(names.databaseName)}`;
  await ctx.apply({
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name: names.credentialsSecret,
      namespace: db.metadata.namespace ?? "",
      labels: { "app.kubernetes.io/managed-by": OPERATOR_NAME, [DATABASE_LABEL]: db.metadata.name ?? "" },
    },
    type: "Opaque",
    stringData: {
      host: server.host,
      port: String(server.port),
      database: names.databaseName,
      username: login,
      password,
      uri,
    },
  });
  if (rotate) ctx.event("Normal", "PasswordRotated", `The app's credentials now use login "${login}"`);
  return rotate || (existing.password === undefined && requested) ? requested : undefined;
}
