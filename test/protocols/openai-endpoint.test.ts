import { describe, expect, it } from 'vitest';
import { buildChatRequest } from '../../src/chat/upstream.js';
import { routeFor } from '../../src/embeddings/vendors/openai/adapter.js';
import { makeUpstream } from '../kit/video.js';
import { openAiEndpoint } from '../../src/protocols/openai/endpoint.js';
import { classifyChatError } from '../../src/chat/upstream.js';

const up = (baseUrl: string, options = {}, apiKey = 'sk-test-0001') => makeUpstream({ baseUrl, options, apiKey, vendor: 'openai' });

describe('the OpenAI family endpoint, shared by embeddings and chat', () => {
  it.each([
    ['https://api.openai.com', {}, 'https://api.openai.com/v1/chat/completions'],
    ['https://api.openai.com/v1', {}, 'https://api.openai.com/v1/chat/completions'],
    ['https://generativelanguage.googleapis.com/v1beta/openai', {}, 'https://generativelanguage.googleapis.com/v1beta/openai/chat/completions'],
    ['https://r.openai.azure.com', { azure: true }, 'https://r.openai.azure.com/openai/v1/chat/completions'],
    ['https://r.openai.azure.com', { api_version: '2024-10-21' }, 'https://r.openai.azure.com/openai/deployments/gpt%2F4o/chat/completions?api-version=2024-10-21'],
  ])('%s %j -> %s', (base, options, url) => {
    expect(openAiEndpoint(up(base, options), 'chat/completions', 'gpt/4o').url).toBe(url);
    expect(routeFor(up(base, options), 'gpt/4o').url).toBe(url.replace('chat/completions', 'embeddings'));
  });

  it('authenticates with Bearer, or api-key on Azure, and carries organization and project', () => {
    expect(openAiEndpoint(up('https://h', { organization: 'org-1', project: 'p-1' }), 'embeddings', 'm').headers).toEqual({
      accept: 'application/json', authorization: 'Bearer sk-test-0001', 'openai-organization': 'org-1', 'openai-project': 'p-1',
    });
    expect(openAiEndpoint(up('https://h', { azure: true }), 'embeddings', 'm').headers).toEqual({ accept: 'application/json', 'api-key': 'sk-test-0001' });
  });

  it('sends chat to an Azure deployment without the model in the body, streaming or not', () => {
    const req = buildChatRequest(up('https://r.openai.azure.com', { api_version: '2024-10-21' }), 'gpt-4o-dep', { model: 'gpt-4o', messages: [] }, true);
    expect(req.url).toBe('https://r.openai.azure.com/openai/deployments/gpt-4o-dep/chat/completions?api-version=2024-10-21');
    expect(req.headers).toMatchObject({ 'api-key': 'sk-test-0001', accept: 'text/event-stream' });
    expect(req.body).toEqual({ messages: [], stream_options: { include_usage: true } });
  });

  it('classifies chat errors with the family envelope: Azure gateway shape and content filters included', () => {
    expect(classifyChatError(401, { statusCode: 401, message: 'Access denied due to invalid subscription key.' }, {})).toMatchObject({
      kind: 'auth', message: 'Access denied due to invalid subscription key.',
    });
    expect(classifyChatError(400, { error: { message: 'filtered', code: 'content_filter', innererror: { code: 'ResponsibleAIPolicyViolation' } } }, {}).kind).toBe('moderation');
    expect(classifyChatError(500, undefined, {})).toMatchObject({ kind: 'retryable', message: 'The upstream answered 500.' });
  });
});
