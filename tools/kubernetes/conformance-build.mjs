#!/usr/bin/env node
// node tools/kubernetes/conformance-build.mjs [--rebuild | --print-dir | --help]: builds what is
// missing of the conformance suite and its test images, prints the directory (--print-dir: only
// prints it; exit 3 when not built). See tools/kubernetes/conformance-build.ts.
import { launch } from './launch.mjs';
launch('conformance-build.ts');
