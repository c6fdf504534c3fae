// Flat ESLint config: type-aware rules for every package, one place for all of them.
import process from 'node:process';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { layerRules, readPackages } from './tools/lint/package-layers.mjs';

// Every file's no-restricted-imports patterns; the layer rules below add to them.
const PUBLIC_INDEX_ONLY = [
  {
    group: ['@constellation/*/src', '@constellation/*/src/*', '@constellation/*/dist/*'],
    message: "Import the package's public index, not its internals.",
  },
];

export default tseslint.config(
  {
    ignores: ['**/dist/**', '**/node_modules/**', '**/coverage/**', '**/src/gen/**', '.nx/**', '.tmp/**'],
  },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    settings: {
      // import-x parses imported files itself (for no-cycle); it needs the TS parser for .ts.
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/extensions': ['.ts', '.js', '.mjs'],
      'import-x/resolver-next': [
        createTypeScriptImportResolver({
          conditionNames: ['@constellation/source', 'types', 'import', 'node', 'default'],
          project: ['apps/*/tsconfig.json', 'libs/*/tsconfig.json', 'tools/tsconfig.json'],
        }),
      ],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'separate-type-imports' }],
      '@typescript-eslint/explicit-module-boundary-types': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      // @kubernetes/client-node and winston declare plain data as classes; object literals of
      // their shape are how they are meant to be used.
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
      'import-x/no-cycle': 'error',
      'import-x/no-self-import': 'error',
      'import-x/no-relative-packages': 'error',
      'import-x/no-extraneous-dependencies': [
        'error',
        // Each package declares what it imports; tools shared by all (vitest) live at the root.
        { includeInternal: false, includeTypes: true, packageDir: [process.cwd(), import.meta.dirname] },
      ],
      'no-restricted-imports': ['error', { patterns: PUBLIC_INDEX_ONLY }],
      'no-restricted-properties': [
        'error',
        { object: 'describe', property: 'only', message: 'Do not commit focused tests.' },
        { object: 'it', property: 'only', message: 'Do not commit focused tests.' },
        { object: 'test', property: 'only', message: 'Do not commit focused tests.' },
      ],
    },
  },
  {
    files: ['**/*.test.ts', 'libs/testing/src/**/*.ts'],
    rules: {
      // Tests assert on values they just built; non-null assertions there are deliberate.
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  // Which layer may import which (apps, product libraries, machines, test harness, tools).
  ...layerRules(readPackages(import.meta.dirname), PUBLIC_INDEX_ONLY),
  {
    files: ['**/*.mjs', '**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    rules: {
      ...tseslint.configs.disableTypeChecked.rules,
      // Destructuring out what a copy must not carry (`const { a: _a, ...rest } = o`) is the idiom.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
);
