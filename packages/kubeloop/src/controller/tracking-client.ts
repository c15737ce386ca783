import type {
  ApplyOptions,
  Client,
  DeleteOptions,
  PatchOptions,
  WriteOptions,
  Written,
} from "../client/index.js";
import {
  type KubeObject,
  keyOfRef,
  kindKeyOf,
  type ObjectKey,
  objectKey,
  type ResourceType,
} from "../client/index.js";
import type { WriteAwareness, WrittenObject } from "./write-awareness.js";

/**
 * Read your own writes, as a client (controller-runtime's `designs/read_your_own_write_client.md`):
 * `ctx.client` is the manager's client with every write of the reconcile recorded, whichever
 * helper makes it (`addFinalizer(ctx.client, …)`, `ctx.client.delete`, `ctx.client.create`). The
 * recording, and what it is for, is write-awareness.ts's; `ctx.apply`, `ctx.status` and the failure
 * recorder write through the same {@link WriteTracker}, so every write path behaves the same.
 *
 * Not tracked: `deleteCollection` and `updateScale` (no object to wait for); reads pass through.
 */
export class WriteTracker {
  constructor(
    private readonly awareness: WriteAwareness,
    /** The reconcile's key: the primary's `namespace/name`. */
    private readonly key: ObjectKey,
  ) {}

  /** A write of the reconcile (create, update, patch, apply, status) to the object `target` names. */
  write<R extends KubeObject>(target: WrittenObject, write: () => Promise<R>): Promise<R> {
    return this.awareness.write(this.key, target, write);
  }

  /** A deletion: the next reconcile waits until the cache no longer shows the object (unless it stays, with finalizers). */
  delete(target: WrittenObject, remove: () => Promise<KubeObject>): Promise<KubeObject> {
    return this.awareness.delete(this.key, target, remove);
  }

  /** `client`, with its writes recorded here; every other method and property is the client's own. */
  client(client: Client): Client {
    const target = writtenOf;
    const ofType = (type: ResourceType, name: string, namespace: string | undefined): WrittenObject => ({
      kind: kindKeyOf(type),
      key: keyOfRef({ namespace: type.namespaced !== false ? namespace : undefined, name }),
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
        this.delete(ofType(type, name, options.namespace), () => client.delete(type, name, options)),
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

/** The identity of an object to write (its own apiVersion and kind: writes need them). */
export function writtenOf(object: KubeObject): WrittenObject {
  return {
    kind: kindKeyOf({ apiVersion: object.apiVersion ?? "", kind: object.kind ?? "" }),
    key: objectKey(object),
  };
}
