export type { HttpAnswer, HttpGetOptions } from './http-get.js';
export { httpGetText } from './http-get.js';
