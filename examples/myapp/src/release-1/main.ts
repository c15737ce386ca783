// The MyApp operator as release 1 shipped it (MyApp v1alpha1 only): kept to show, and test, the
// upgrade to release 2. Settings: see ../options.ts.
import { Manager } from "kubeloop";
import { managerOptions } from "../options.ts";
import { myAppV1alpha1Controller } from "./controller.ts";

await new Manager(managerOptions()).add(myAppV1alpha1Controller).start();
