import { isAlias, isNode, parseAllDocuments, stringify, visit } from "yaml";

/**
 * YAML as kubeloop writes it: one document per object, long strings on one line, and no anchors or
 * aliases. The yaml library turns an object that appears twice (the Deployment's labels, reused as
 * its selector) into `&a1` … `*a1`; Kubernetes accepts that, but Helm templates, OLM and reviewers
 * do not expect it, so every object is written out in full.
 */
export function toYaml(object: unknown): string {
  return stringify(object, { lineWidth: 0, aliasDuplicateObjects: false });
}

/** Several objects as one multi-document YAML text. */
export function toYamlDocuments(objects: readonly unknown[]): string {
  return objects.map(toYaml).join("---\n");
}

/** Where a YAML text uses an anchor or an alias (`&name`, `*name`): empty when it uses none. */
export function anchorsIn(text: string): string[] {
  const found: string[] = [];
  for (const document of parseAllDocuments(text)) {
    if ("errors" in document && document.errors.length > 0) continue;
    visit(document, (_key, node) => {
      if (isAlias(node)) found.push(`*${node.source}`);
      else if (isNode(node) && node.anchor) found.push(`&${node.anchor}`);
    });
  }
  return found;
}
