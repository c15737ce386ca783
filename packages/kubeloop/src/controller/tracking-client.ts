import type {
  ApplyOptions,
  Client,
  DeleteOptions,
  PatchOptions,
  WriteOptions,
  Written,
} from "../client/index.js";
import { type KubeObject, objectKey, type ResourceType } from "../client/index.js";
import { type Expectations, typeKeyOf } from "./expectations.js";

/**
 * Read your own writes, as a client (controller-runtime's `designs/read_your_own_write_client.md`):
 * `ctx.client` is the manager's client with every write of the reconcile recorded, whichever
 * helper makes it (`addFinalizer(ctx.client, …)`, `ctx.client.delete`, `ctx.client.create`,
 * `ctx.apply`, `ctx.status`). Before the next reconcile of the key, the controller waits until its
 * cache shows each written object at that version or newer, and each deleted object gone.
 *
 * The echo of a write made through `ctx.client` wakes the key like anyone's change (a reconciler
 * that changes its own object is woken by it, as with controller-runtime); the writes of
 * `ctx.apply` and `ctx.status` are quiet: their echoes are known, and do not wake it.
 *
 * Not tracked: `deleteCollection` and `updateScale` (no object to wait for); reads pass through.
 */
export class WriteTracker {
  constructor(
    private readonly expectations: Expectations,
    /** The reconcile's key: the primary's `namespace/name`. */
    private readonly key: string,
    private readonly primaryTypeKey: string,
  ) {}

  /**
   * A write of the reconcile. `quiet`: its echo must not wake the key, so the echo is told apart
   * even when it arrives before the response (a child's: held until the response; the primary's
   * status: a status-only change while the write is in flight).
   */
  async write<R extends KubeObject>(
    target: { apiVersion: string; kind: string; key: string },
    write: () => Promise<R>,
    quiet = false,
  ): Promise<R> {
    const typeKey = typeKeyOf(target.apiVersion, target.kind);
    let written: R;
    if (!quiet) written = await write();
    else if (typeKey === this.primaryTypeKey && target.key === this.key)
      written = await this.expectations.writing(this.key, write);
    else written = await this.expectations.writingObject(target, write);
    this.expectations.expect(this.key, written, quiet);
    return written;
  }

  /** A deletion: the next reconcile waits until the cache no longer shows the object (unless it stays, with finalizers). */
  async delete(type: ResourceType, key: string, remove: () => Promise<KubeObject>): Promise<KubeObject> {
    const left = await remove();
    const meta = left.metadata;
    // Finalizers or a grace period keep it, deleting: wait for that version. Otherwise it is gone.
    if (left.kind !== "Status" && (meta?.finalizers?.length || (meta?.deletionGracePeriodSeconds ?? 0) > 0))
      this.expectations.expect(this.key, { apiVersion: type.apiVersion, kind: type.kind, ...left }, false);
    else this.expectations.expectGone(this.key, typeKeyOf(type.apiVersion, type.kind), key, meta?.uid);
    return left;
  }

  /** `client`, with its writes recorded here; every other method and property is the client's own. */
  client(client: Client): Client {
    const target = (object: KubeObject) => ({
      apiVersion: object.apiVersion ?? "",
      kind: object.kind ?? "",
      key: objectKey(object),
    });
    const ofType = (type: ResourceType, name: string, namespace: string | undefined) => ({
      apiVersion: type.apiVersion,
      kind: type.kind,
      key: namespace && type.namespaced !== false ? `${namespace}/${name}` : name,
    });
    const writes: Partial<Client> = {
      create: <T extends KubeObject>(object: T, options?: WriteOptions): Promise<Written<T>> =>
        this.write(target(object), () => client.create(object, options)),
      update: <T extends KubeObject>(object: T, options?: WriteOptions): Promise<Written<T>> =>
        this.write(target(object), () => client.update(object, options)),
      updateStatus: <T extends KubeObject>(object: T, options?: WriteOptions): Promise<Written<T>> =>
        this.write(target(object), () => client.updateStatus(object, options)),
      apply: <T extends KubeObject>(object: T, options: ApplyOptions): Promise<Written<T>> =>
        this.write(target(object), () => client.apply(object, options)),
      applyStatus: <T extends KubeObject>(object: T, options: ApplyOptions): Promise<Written<T>> =>
        this.write(target(object), () => client.applyStatus(object, options)),
      patch: <T extends KubeObject>(
        type: ResourceType<T>,
        name: string,
        patch: unknown,
        options: PatchOptions = {},
      ): Promise<T> =>
        this.write(ofType(type, name, options.namespace), () => client.patch(type, name, patch, options)),
      delete: (type: ResourceType, name: string, options: DeleteOptions = {}): Promise<KubeObject> =>
        this.delete(type, ofType(type, name, options.namespace).key, () =>
          client.delete(type, name, options),
        ),
    };
    return new Proxy(client, {
      get(original, property) {
        if (Object.hasOwn(writes, property)) return writes[property as keyof Client];
        const value: unknown = Reflect.get(original, property, original);
        return typeof value === "function" ? value.bind(original) : value;
      },
    });
  }
}
