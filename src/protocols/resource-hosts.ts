/**
 * The hosts of the vendor families whose first labels are the operator's own resource, not the
 * vendor's: an Azure OpenAI, AI services or Foundry resource (`myres.openai.azure.com`), an Azure AI
 * inference endpoint (`my-llama.eastus2.inference.ai.azure.com`), an Azure storage account or API
 * Management instance, and an S3 or Cloud Storage bucket addressed by host. The Catalog gives each
 * upstream the names read in its configured hosts (Upstream.resourceNames), which the redaction of
 * its text hides as whole tokens (core/redact-names.ts) even without the host around them.
 */
const RESOURCE_HOST =
  /^([a-z0-9][a-z0-9_.-]*?)\.(?:openai\.azure\.com|cognitiveservices\.azure\.com|services\.ai\.azure\.com|[a-z0-9-]+\.inference\.ai\.azure\.com|(?:blob|file|queue|dfs)\.core\.windows\.net|azure-api\.net|storage\.googleapis\.com|s3(?:[.-][a-z0-9-]+)?\.amazonaws\.com)$/;

/**
 * The resource names in `hosts` (lower-cased, as core/redact-config.ts configuredHosts gives them).
 * Not one that is also a label of the vendor's own part of the host: a resource named "openai" at
 * openai.openai.azure.com would hide every "OpenAI" of a message.
 */
export function resourceNamesOf(hosts: Iterable<string>): string[] {
  const out: string[] = [];
  for (const host of hosts) {
    const m = RESOURCE_HOST.exec(host);
    if (!m) continue;
    const name = m[1]!;
    if (!host.slice(name.length + 1).split('.').includes(name)) out.push(name);
  }
  return out;
}
