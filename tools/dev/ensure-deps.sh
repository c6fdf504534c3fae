#!/usr/bin/env bash
# Installs what the project needs on a fresh Debian machine, and nothing when it is already there:
# the Debian packages for TPM, disk and network work, and the npm packages from package-lock.json.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

# program -> Debian package that provides it
declare -A needed=(
  [swtpm]=swtpm
  [swtpm_setup]=swtpm-tools
  [tpm2_quote]=tpm2-tools
  [cryptsetup]=cryptsetup-bin
  [ip]=iproute2
  [openssl]=openssl
  [gpg]=gpg
  [systemd-analyze]=systemd
  # release artifacts (docs/artifacts.md): the JoinService image, the node .deb
  [buildah]=buildah
  [podman]=podman
  [runc]=runc
  [lintian]=lintian
  [dpkg-deb]=dpkg
  [strip]=binutils
  # building runc with seccomp (tools/kubernetes/build.mjs): cgo
  [gcc]=gcc
  [pkg-config]=pkg-config
  # the conformance suite's busybox image: upstream busybox built from its release tarball
  # (tools/kubernetes/conformance-build.mjs)
  [make]=make
  [bzip2]=bzip2
  # mini's and the test control planes' network namespaces: nsenter, not `ip netns exec`
  [nsenter]=util-linux
  # mini's nodes: a busybox image for trying pods (tools/kubernetes/images.mjs)
  [busybox]=busybox-static
  # mini's kube-proxy image: its nftables proxier loads rules with nft (tools/kubernetes/images.mjs)
  [nft]=nftables
  # libs/measured-boot's tests: UKIs built with objcopy, Authenticode digests checked against
  # pesign and osslsigncode (which also signs a test image)
  [objcopy]=binutils
  [pesign]=pesign
  [osslsigncode]=osslsigncode
  # mini's VM nodes (libs/machines, provider qemu): QEMU with OVMF and swtpm
  [qemu-system-x86_64]=qemu-system-x86
  # the node image (npm run node-image, tools/node-image): Debian's root filesystem, its squashfs
  # and dm-verity tree (veritysetup: cryptsetup-bin), the initrd's cpio archive, the ESP
  [mmdebstrap]=mmdebstrap
  [mksquashfs]=squashfs-tools
  [veritysetup]=cryptsetup-bin
  [cpio]=cpio
  [zstd]=zstd
  [mkfs.vfat]=dosfstools
  [mcopy]=mtools
)
missing=()
for program in "${!needed[@]}"; do
  if ! command -v "$program" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$program" ] && [ ! -x "/sbin/$program" ]; then
    missing+=("${needed[$program]}")
  fi
done
# mini's pod network: Debian's CNI plugins (bridge, host-local), found by path
if [ ! -x /usr/lib/cni/bridge ]; then
  missing+=(containernetworking-plugins)
fi
# libs/measured-boot's tests: Debian's systemd-stub, the base of the node image's UKI, found by path
if [ ! -f /usr/lib/systemd/boot/efi/linuxx64.efi.stub ]; then
  missing+=(systemd-boot-efi)
fi
# the VMs' firmware: Debian's OVMF, found by path
if [ ! -f /usr/share/OVMF/OVMF_CODE_4M.fd ]; then
  missing+=(ovmf)
fi
# runc's seccomp support links against libseccomp (a library: no program to look for)
if ! pkg-config --exists libseccomp 2>/dev/null; then
  missing+=(libseccomp-dev)
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "==> installing Debian packages: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "error: need root (or sudo) to install: ${missing[*]}" >&2
      exit 1
    fi
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" -lt 20 ]; then
  echo "error: Node.js 20 or newer is required, found $(node --version)" >&2
  exit 1
fi

# Install from package-lock.json when node_modules is missing or older than the lock file.
# `npm install --no-save` rather than `npm ci`: lock files written with this machine's npm
# settings (no resolved URLs) leave out other platforms' optional binaries, which `npm ci`
# rejects as "Missing from lock file"; install honours the lock and changes nothing.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "==> installing npm packages"
  npm install --no-save --no-fund --no-audit --loglevel=error
fi

# The real Kubernetes programs (kube-apiserver, etcd, kubeadm, kubelet, kubectl, containerd, runc),
# built from the Go module proxy into a cache outside the clone; nothing to do when built already.
if ! command -v go >/dev/null 2>&1; then
  echo "error: Go 1.26 or newer is needed to build the Kubernetes programs (tools/kubernetes/build.mjs)" >&2
  exit 1
fi
node tools/kubernetes/build.mjs >/dev/null
# The container images mini's nodes carry (control plane, kube-proxy, CoreDNS, pause, busybox).
node tools/kubernetes/images.mjs >/dev/null
