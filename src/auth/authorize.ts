import { errors } from '../core/errors.js';
import type { Capability, Catalog, ModelInfo } from '../routing/catalog.js';
import { globMatch } from '../routing/glob.js';
import type { KeyAction } from '../store/types.js';
import type { AuthContext } from './types.js';

/** What of a key decides which models it may use, and so which of its account's jobs it reads. */
export interface KeyModels {
  readonly models: readonly string[];
}

/** Whether one of the key's model patterns names `model` (the default `*` names every model). */
export function keyMayUseModel(key: KeyModels, model: string): boolean {
  return key.models.some((g) => globMatch(g, model));
}

/** 403 unless the key may call the endpoints of `action`. */
export function requireAction(ctx: AuthContext, action: KeyAction): void {
  if (!ctx.key.actions.includes(action)) throw errors.permissionDenied(`This API key may not use the ${action} endpoints.`);
}

/**
 * Decides whether a key may perform an action on a model:
 * - unknown model: 404 model_not_found
 * - model outside the key's patterns, or served by no upstream enabled for the account: 403
 * - key without the action: 403
 * - model without the capability the endpoint needs: 400 (the model exists, it just cannot do this)
 */
export class Authorizer {
  constructor(private readonly catalog: Catalog) {}

  model(ctx: AuthContext, action: KeyAction, model: unknown, capability: Capability): ModelInfo {
    // The request gate checked it already for routes that name it (auth/request-gate.ts); callers of
    // this check get it whatever route they serve.
    requireAction(ctx, action);
    if (typeof model !== 'string' || model.length === 0)
      throw errors.invalidRequest("'model' is required and must be a string.", 'model', 'missing_required_parameter');
    const info = this.catalog.model(model);
    if (!info) throw errors.modelNotFound(model);
    if (!keyMayUseModel(ctx.key, model))
      throw errors.permissionDenied(`This API key may not use the model '${model}'.`, 'model');
    if (!info.capabilities.includes(capability))
      throw errors.invalidRequest(`The model '${model}' does not support ${capability}.`, 'model', 'model_not_supported');
    if (this.catalog.servingUpstreams(model, ctx.account).length === 0)
      throw errors.permissionDenied(`The model '${model}' is not enabled for this account.`, 'model');
    return info;
  }
}
