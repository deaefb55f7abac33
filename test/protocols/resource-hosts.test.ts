import { describe, expect, it } from 'vitest';
import { redactorFor } from '../../src/core/redact.js';
import { resourceNamesOf } from '../../src/protocols/resource-hosts.js';
import { Catalog } from '../../src/routing/catalog.js';

/** The hosts whose first labels are the operator's resource, and the Catalog giving each upstream those names. */
describe('resource names in configured hosts', () => {
  it('are the resource part of the vendor families\' resource hosts', () => {
    expect(resourceNamesOf(['myres.openai.azure.com'])).toEqual(['myres']);
    expect(resourceNamesOf(['oai-eastus.cognitiveservices.azure.com', 'found-1.services.ai.azure.com'])).toEqual(['oai-eastus', 'found-1']);
    expect(resourceNamesOf(['my-llama.eastus2.inference.ai.azure.com'])).toEqual(['my-llama']);
    expect(resourceNamesOf(['acct01.blob.core.windows.net', 'gw-prod.azure-api.net'])).toEqual(['acct01', 'gw-prod']);
    expect(resourceNamesOf(['out.bucket.s3.us-east-1.amazonaws.com', 'media.s3.amazonaws.com', 'logs.s3-us-west-2.amazonaws.com'])).toEqual(['out.bucket', 'media', 'logs']);
    expect(resourceNamesOf(['media-out.storage.googleapis.com'])).toEqual(['media-out']);
  });

  it('are none in a vendor\'s own hosts, nor a name that is also a label of the vendor\'s part', () => {
    const hosts = [
      'api.openai.com', 'us-central1-aiplatform.googleapis.com', 'storage.googleapis.com', 'bedrock-runtime.us-east-1.amazonaws.com',
      'models.inference.ai.azure.com', 'dashscope-intl.aliyuncs.com', 'openai.openai.azure.com', '127.0.0.1', 'myres.openai.azure.com.evil.org',
    ];
    expect(resourceNamesOf(hosts)).toEqual([]);
  });

  it('reach the redaction of the upstream through the Catalog', () => {
    const common = { api_key: 'sk-upstream-0123456789', priority: 1, weight: 1, timeout_ms: 1000, enabled: true };
    const upstreams = [
      { ...common, name: 'az', vendor: 'openai', base_url: 'https://MyRes.openai.azure.com/', azure: true, models: ['emb'] },
      { ...common, name: 'veo', vendor: 'veo', base_url: 'https://us-central1-aiplatform.googleapis.com', project: 'acme-video-prod', storage_base_url: 'https://media-out.storage.googleapis.com', models: ['veo'] },
    ];
    const models = { emb: { capabilities: ['embedding'], price: { per_million_input_tokens: 1 } }, veo: { capabilities: ['video'], price: { per_second: 0.1 } } };
    const cat = new Catalog({ upstreams, models } as never);
    expect(cat.upstream('az')!.resourceNames).toEqual(['myres']);
    expect(cat.upstream('veo')!.resourceNames).toEqual(['media-out']);
    expect(redactorFor(cat.upstream('az')!).text("Resource 'myres' was not found")).toBe("Resource '[upstream]' was not found");
    expect(redactorFor(cat.upstream('veo')!).text('Permission denied on acme-video-prod writing to media-out')).toBe('Permission denied on [upstream] writing to [upstream]');
  });
});
