/**
 * One YAML fragment per vendor for `gateway init`: every key the vendor needs, secrets as ${ENV}
 * references (never literal), and prices marked to fill in. The prices given are the simulator's
 * demo prices, only so the file loads; set your own contract's.
 */
export interface VendorTemplate {
  id: string;
  /** Environment variables the fragment references. */
  env: string[];
  upstream: string;
  models: string;
}

const PRICE_NOTE = '# FILL IN your price (currency units); a video model without a price refuses to start';

export const TEMPLATES: readonly VendorTemplate[] = [
  {
    id: 'wan',
    env: ['DASHSCOPE_API_KEY'],
    upstream: `  - name: wan
    vendor: wan                       # Alibaba Model Studio (DashScope), async video tasks
    base_url: https://dashscope-intl.aliyuncs.com   # mainland China: https://dashscope.aliyuncs.com
    api_key: \${DASHSCOPE_API_KEY}
    models: [wan2.6-t2v, wan2.6-i2v]`,
    models: `  wan2.6-t2v: { capabilities: [video], price: { per_second: 0.10 } }   ${PRICE_NOTE}
  wan2.6-i2v: { capabilities: [video], price: { per_second: 0.10 } }`,
  },
  {
    id: 'seedance',
    env: ['ARK_API_KEY'],
    upstream: `  - name: seedance
    vendor: seedance                  # ByteDance Seedance on Volcengine Ark (BytePlus ModelArk works the same)
    base_url: https://ark.cn-beijing.volces.com
    api_key: \${ARK_API_KEY}
    models: [doubao-seedance-1-5-pro-251215]`,
    models: `  doubao-seedance-1-5-pro-251215: { capabilities: [video], price: { per_second: 0.05 } }   ${PRICE_NOTE}`,
  },
  {
    id: 'veo',
    env: ['GOOGLE_CLOUD_PROJECT', 'GOOGLE_APPLICATION_CREDENTIALS'],
    upstream: `  - name: veo
    vendor: veo                       # Veo on Vertex AI (predictLongRunning + fetchPredictOperation)
    base_url: https://us-central1-aiplatform.googleapis.com   # https://{location}-aiplatform.googleapis.com
    project: \${GOOGLE_CLOUD_PROJECT}
    location: us-central1
    # Credentials, one of three forms (no api_key: Vertex takes OAuth tokens minted from a service account):
    #   key_file: path of a service-account JSON key (read once, at start; tokens are minted and renewed)
    #   service_account: the same JSON inline, e.g. \${VERTEX_SERVICE_ACCOUNT_JSON}
    #   access_token: a ready token (expires after about an hour; for trials only)
    key_file: \${GOOGLE_APPLICATION_CREDENTIALS}
    # storage_uri: gs://your-bucket/veo/   # where Veo writes videos; without it they come back inline
    models: [veo-3.1-generate-001, veo-3.1-fast-generate-001]`,
    models: `  veo-3.1-generate-001: { capabilities: [video], price: { per_second: 0.40 } }   ${PRICE_NOTE}
  veo-3.1-fast-generate-001: { capabilities: [video], price: { per_second: 0.15 } }`,
  },
  {
    id: 'sora',
    env: ['OPENAI_API_KEY'],
    upstream: `  - name: sora
    vendor: sora                      # OpenAI Videos API (/v1/videos)
    base_url: https://api.openai.com
    api_key: \${OPENAI_API_KEY}
    models: [sora-2, sora-2-pro]`,
    models: `  sora-2: { capabilities: [video], price: { per_second: 0.10 } }   ${PRICE_NOTE}
  sora-2-pro: { capabilities: [video], price: { per_second: 0.30 } }`,
  },
  {
    id: 'azure-sora',
    env: ['AZURE_OPENAI_ENDPOINT', 'AZURE_OPENAI_API_KEY'],
    upstream: `  - name: azure-sora
    vendor: azure-sora                # Sora preview jobs API on Azure OpenAI
    base_url: \${AZURE_OPENAI_ENDPOINT}   # https://{resource}.openai.azure.com
    api_key: \${AZURE_OPENAI_API_KEY}     # sent as the api-key header
    api_version: preview
    deployments: { sora: sora }       # public model name -> your deployment name
    models: [sora]`,
    models: `  sora: { capabilities: [video], price: { per_second: 0.10 } }   ${PRICE_NOTE}`,
  },
  {
    id: 'fal',
    env: ['FAL_KEY'],
    upstream: `  - name: fal
    vendor: fal                       # fal.ai queue API
    base_url: https://queue.fal.run
    api_key: \${FAL_KEY}                # sent as "Authorization: Key ..."
    models: [fal-ai/veo3/fast]`,
    models: `  fal-ai/veo3/fast: { capabilities: [video], price: { per_second: 0.40 } }   ${PRICE_NOTE}`,
  },
  {
    id: 'openai',
    env: ['OPENAI_API_KEY'],
    upstream: `  - name: openai-embeddings
    vendor: openai                    # any OpenAI-compatible /v1/embeddings (Azure: api_version or azure: true)
    base_url: https://api.openai.com
    api_key: \${OPENAI_API_KEY}
    models: [text-embedding-3-small]`,
    models: `  text-embedding-3-small: { capabilities: [embedding], price: { per_million_input_tokens: 0.02 } }   # FILL IN your price`,
  },
  {
    id: 'vertex',
    env: ['GOOGLE_CLOUD_PROJECT', 'GOOGLE_APPLICATION_CREDENTIALS'],
    upstream: `  - name: vertex-embeddings
    vendor: vertex                    # Vertex AI :predict; same credential forms as veo above
    base_url: https://us-central1-aiplatform.googleapis.com
    project: \${GOOGLE_CLOUD_PROJECT}
    location: us-central1
    key_file: \${GOOGLE_APPLICATION_CREDENTIALS}
    models: [text-embedding-005]`,
    models: `  text-embedding-005: { capabilities: [embedding], price: { per_million_input_tokens: 0.025 } }   # FILL IN your price`,
  },
  {
    id: 'bedrock',
    env: ['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY'],
    upstream: `  - name: bedrock-embeddings
    vendor: bedrock                   # Bedrock InvokeModel, TwelveLabs Marengo
    base_url: https://bedrock-runtime.us-east-1.amazonaws.com
    region: us-east-1
    # AWS credentials, SigV4-signed: an access key pair (plus session_token for temporary STS credentials),
    # or a Bedrock API key as api_key (sent as a bearer token) instead of the pair.
    access_key_id: \${AWS_ACCESS_KEY_ID}
    secret_access_key: \${AWS_SECRET_ACCESS_KEY}
    # session_token: \${AWS_SESSION_TOKEN}
    models: [twelvelabs.marengo-embed-2-7-v1:0]`,
    models: `  twelvelabs.marengo-embed-2-7-v1:0: { capabilities: [embedding], price: { per_million_input_tokens: 0.07 } }   # FILL IN your price`,
  },
];

export const VENDOR_IDS = TEMPLATES.map((t) => t.id);

/** The whole commented gateway.yaml for the chosen vendors. */
export function renderConfig(vendors: readonly string[]): string {
  const chosen = TEMPLATES.filter((t) => vendors.includes(t.id));
  const env = [...new Set(chosen.flatMap((t) => t.env))];
  return `# gateway.yaml written by \`gateway init --vendors ${vendors.join(',')}\`.
# Check it with \`gateway check --config gateway.yaml\` (add --probe to call each upstream once).
# \${NAME} is replaced by the environment variable NAME when the file loads (\${NAME:-default} too);
# keep secrets in the environment, never in this file. This file needs: ${env.join(', ')}.
server: { host: 127.0.0.1, port: 8080 }   # public_url: https://gw.example.com (for output_url links)
database: sqlite:./data/gateway.db        # or postgres://user@host:5432/db for several instances
data_dir: ./data
# secret: \${GATEWAY_SECRET}              # seals video ids; generated into data_dir when absent
# admin_token: \${GATEWAY_ADMIN_TOKEN}    # generated into data_dir/admin-token when absent
upstreams:
${chosen.map((t) => t.upstream).join('\n')}
models:
${chosen.map((t) => t.models).join('\n')}
`;
}
