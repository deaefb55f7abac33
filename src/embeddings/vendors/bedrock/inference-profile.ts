/**
 * Marengo Embed 2.7 is served by synchronous `InvokeModel` only through a cross-Region inference
 * profile: the Bedrock user guide's "TwelveLabs Marengo Embed 2.7" page lists InvokeModel under
 * "Inference profile" and StartAsyncInvoke under "Base model", and "Supported Regions and models for
 * inference profiles" names the ids `us.`, `eu.` and `apac.twelvelabs.marengo-embed-2-7-v1:0`. A
 * base id sent to InvokeModel is refused ("on-demand throughput isn't supported"), so a configured base
 * id is mapped to the profile of the upstream's geography. Marengo Embed 3.0 takes its base id in
 * US East (N. Virginia) and Asia Pacific (Seoul) but only a profile in Europe (Ireland), per its own page.
 * Ids that already name a profile (or an ARN), and other models, pass unchanged.
 */
const NEEDS_PROFILE: readonly [RegExp, RegExp][] = [
  [/^twelvelabs\.marengo-embed-2-7/, /./],
  [/^twelvelabs\.marengo-embed-3-0/, /^eu-/],
];

const GEOGRAPHIES: readonly [RegExp, string][] = [
  [/^us-/, 'us'],
  [/^eu-/, 'eu'],
  [/^ap-/, 'apac'],
];

export function invokeModelId(modelId: string, region: string): string {
  if (!NEEDS_PROFILE.some(([model, regions]) => model.test(modelId) && regions.test(region))) return modelId;
  const geo = GEOGRAPHIES.find(([re]) => re.test(region))?.[1];
  // No profile for this geography: send the id as configured and let Bedrock's refusal say why.
  return geo ? `${geo}.${modelId}` : modelId;
}
