import packageJson from '../package.json' with { type: 'json' };

/** Version of this program, from its package.json (bundled in at build time). */
export const VERSION: string = packageJson.version;
