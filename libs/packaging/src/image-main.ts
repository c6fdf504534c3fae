// `npm run image`: the JoinService container image, tagged as deploy/joinservice names it.
import { buildJoinServiceImage } from './container-image.js';
import { defaultReleaseDir } from './release-layout.js';

const image = await buildJoinServiceImage(defaultReleaseDir);
process.stdout.write(
  `${image.reference}@${image.digest}\n  archive: ${image.archive}\n  pinned manifests: ${image.kustomization}\n`,
);
