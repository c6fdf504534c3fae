export type { BootstrapToken } from './bootstrap-token.js';
export {
  BOOTSTRAP_TOKEN_PATTERN,
  NODE_BOOTSTRAP_GROUP,
  bootstrapTokenSecret,
  createBootstrapToken,
  generateBootstrapToken,
} from './bootstrap-token.js';
