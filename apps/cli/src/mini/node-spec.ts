import type { BootComponent } from '@constellation/attestation';
import type { MiniNetwork } from '@constellation/node-environment';
import type { EkCa } from '@constellation/swtpm';
import type { MiniArtifacts } from './artifacts.js';
import type { Tamper } from './tamper.js';

/** The container images a node image carries. */
export interface NodeImages {
  controlPlane: string[];
  worker: string[];
  /** [source, target]: names given to the control planes' imported images (an archive keeps a short name as written). */
  tags: [string, string][];
  sandbox: string;
}

/** What a node image trusts, as its vendor put it there. */
export interface ImageTrust {
  /** The armored OpenPGP public key the component manifests are signed with (the node's pinned keyring). */
  manifestPublicKey: string;
  /** The EK CA whose certificates the node sends with its EK and checks the JoinService's host against. */
  ekCa: EkCa;
}

/** One node of mini as any provider makes it: its place in the cluster, its image and its settings. */
export interface NodeSpec {
  artifacts: MiniArtifacts;
  /** The machine's directory on the host (`<cluster dir>/<name>`), where its TPM was manufactured. */
  dir: string;
  network: MiniNetwork;
  /** Position in the network (namespace and address). */
  index: number;
  instance: { name: string; role: 'control-plane' | 'worker'; ip: string; ekPublicKeyHash: string };
  metadataUrl: string;
  apiServerPort: number;
  ports: { init: number; recovery: number; verify: number };
  /** The built programs: containerd, runc and ctr run from here; node preparation installs kubeadm and the kubelet from the artifact host. */
  kubernetesBinDir: string;
  /** Every node's name and address (each node's /etc/hosts). */
  hosts: { name: string; ip: string }[];
  /** The OCI archives the node image carries, by role, the names the kubelet asks for, and the sandbox image. */
  images: NodeImages;
  /** The image's measured boot chain. */
  boot: BootComponent[];
  /** What the node image trusts: the vendor's component-manifest signing key and its EK CA. */
  imageTrust: ImageTrust;
  /** Run a modified bootstrapper bundle, and what its event log says about it. */
  tamper: Tamper | undefined;
}
