#!/usr/bin/env node
// node tools/kubernetes/images.mjs [--rebuild | --print-dir | --help]: builds the container images
// mini's nodes run, beside the built programs (tools/kubernetes/images.ts; --help says more).
import { launch } from './launch.mjs';

launch('images.ts');
