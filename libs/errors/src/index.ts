export { errorMessage } from './error-message.js';
