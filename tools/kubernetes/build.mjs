#!/usr/bin/env node
// node tools/kubernetes/build.mjs [--rebuild | --print-bin-dir | --help]: builds the real
// Kubernetes programs into the cache (tools/kubernetes/build.ts; --help says more).
import { launch } from './launch.mjs';

launch('build.ts');
