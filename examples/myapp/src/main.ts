// The MyApp operator, release 2: `npm start` (in this folder) runs it against the current
// KUBECONFIG. Settings: see options.ts. ENABLE_WEBHOOKS=false runs without the conversion webhook
// (only when no v1alpha1 object is left and v1alpha1 is no longer served).
import { Manager } from "kubeloop";
import { myAppController } from "./myapp.ts";
import { managerOptions } from "./options.ts";
import { myAppWebhooks } from "./webhooks.ts";

const manager = new Manager(managerOptions());
manager.add(myAppController).addWebhooks(myAppWebhooks);
await manager.start();
