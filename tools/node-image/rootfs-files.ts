// The files the node image adds to Debian's: the container runtime's unit and configuration, the
// kubelet's unit, the boot-measurements unit, and the settings a read-only root needs. Each is a
// function of nothing but constants, so the same recipe writes the same bytes.

/** Where the Kubernetes build's container runtime programs go (not Debian's: /usr/local). */
export const RUNTIME_BIN_DIR = '/usr/local/bin';

/**
 * Where node preparation installs kubeadm and the kubelet at first boot (the signed component
 * manifest's installPath, docs/node-preparation.md); /usr/local/bin links to them.
 */
export const PREPARED_BIN_DIR = '/run/state/bin';

/** Debian's CNI plugins (containernetworking-plugins). */
export const CNI_BIN_DIR = '/usr/lib/cni';

/** containerd as upstream's containerd.service runs it, from /usr/local/bin. */
export const CONTAINERD_UNIT = `# containerd, the node's container runtime (upstream's containerd.service, from ${RUNTIME_BIN_DIR}).
[Unit]
Description=containerd container runtime
Documentation=https://containerd.io
After=network.target local-fs.target dbus.service

[Service]
ExecStartPre=-/sbin/modprobe overlay
ExecStart=${RUNTIME_BIN_DIR}/containerd
Type=notify
Delegate=yes
KillMode=process
Restart=always
RestartSec=5
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
OOMScoreAdjust=-999

[Install]
WantedBy=multi-user.target
`;

/**
 * containerd 2's configuration (version 3). The systemd cgroup driver: systemd is the node's init
 * and owns the cgroup v2 tree, and kubeadm configures the kubelet with cgroupDriver: systemd (its
 * default), which must match the runtime's. (mini's namespace nodes use cgroupfs: no systemd there.)
 * The pod sandbox is the build's pause image (containerd's default names another release, which
 * no registry would serve a node that has none). /etc/cni/net.d is a tmpfs (the initrd mounts it):
 * a CNI add-on writes its configuration there.
 */
export const containerdConfig = (
  sandboxImage: string,
): string => `# containerd 2 (configuration version 3) on a systemd node: the systemd cgroup driver, as the kubelet's.
version = 3
root = '/var/lib/containerd'
state = '/run/containerd'

[grpc]
  address = '/run/containerd/containerd.sock'

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '${sandboxImage}'

  [plugins.'io.containerd.cri.v1.runtime']
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = '${RUNTIME_BIN_DIR}/runc'
          SystemdCgroup = true
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['${CNI_BIN_DIR}']
      conf_dir = '/etc/cni/net.d'
`;

/**
 * The kubelet as kubeadm's packages start it (kubelet.service with kubeadm's 10-kubeadm.conf folded
 * in), from where node preparation installs it. Not enabled: the bootstrapper starts it once the
 * node belongs to a cluster. The node .deb's drop-in adds node preparation's kubelet.env.
 */
export const KUBELET_UNIT = `# The kubelet, installed by node preparation at first boot (${PREPARED_BIN_DIR}/kubelet).
# Not enabled: the bootstrapper starts it once the node has joined.
[Unit]
Description=kubelet: The Kubernetes Node Agent
Documentation=https://kubernetes.io/docs/
Wants=network-online.target containerd.service
After=network-online.target containerd.service

[Service]
Environment="KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"
Environment="KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"
# Written by kubeadm init/join at runtime.
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
ExecStart=${PREPARED_BIN_DIR}/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS
Restart=always
RestartSec=10

[Install]
WantedBy=multi-user.target
`;

/** Marker lines around the event log on the console (tools/node-image/serial-log.ts reads them). */
export const BOOT_MEASUREMENTS = {
  prefix: 'constellation-boot-measurements:',
  pcrLine: 'pcr-sha256',
  logBegin: 'event log begin',
  logEnd: 'event log end',
} as const;

export const BOOT_MEASUREMENTS_SCRIPT_PATH = '/usr/lib/constellation/print-boot-measurements';

/**
 * Prints this boot's PCRs 4, 9 and 11 (sha256 bank) on one line, and the firmware's TCG event log
 * in base64 between marker lines. Each line goes out in one write, so systemd's status lines on the
 * same console never land inside one.
 */
export const BOOT_MEASUREMENTS_SCRIPT = `#!/bin/sh
# Prints this boot's PCRs 4, 9 and 11 (sha256 bank) and the firmware's TCG event log (base64,
# between marker lines) to the console, for the host that booted the node
# (tools/node-image/serial-log.ts). Reads only.
set -u
p='${BOOT_MEASUREMENTS.prefix}'
tpm=/sys/class/tpm/tpm0
line="$p ${BOOT_MEASUREMENTS.pcrLine}"
for pcr in 4 9 11; do
  value=$(tr 'A-F' 'a-f' <"$tpm/pcr-sha256/$pcr" 2>/dev/null) || value=unavailable
  line="$line $pcr=\${value:-unavailable}"
done
printf '%s\\n' "$line"
log=/sys/kernel/security/tpm0/binary_bios_measurements
if [ ! -e "$log" ] && ! mountpoint -q /sys/kernel/security; then
  mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
fi
if [ ! -r "$log" ]; then
  printf '%s no event log at %s\\n' "$p" "$log"
  exit 0
fi
copy=$(mktemp)
cat "$log" >"$copy"
size=$(stat -c %s "$copy")
sum=$(sha256sum <"$copy" | cut -d' ' -f1)
printf '%s ${BOOT_MEASUREMENTS.logBegin} %s bytes sha256 %s\\n' "$p" "$size" "$sum"
base64 -w 76 "$copy" | while IFS= read -r chunk; do printf '%s\\n' "$chunk"; done
printf '%s ${BOOT_MEASUREMENTS.logEnd}\\n' "$p"
rm -f "$copy"
`;

/**
 * Runs the script once per boot. Wanted by multi-user.target but not ordered after it: a oneshot
 * that waits for the boot to finish would hold up the very boot it waits for.
 */
export const BOOT_MEASUREMENTS_UNIT = `# Prints the boot's PCRs 4, 9, 11 and the firmware event log on the console (see the script).
[Unit]
Description=Print the boot's TPM measurements to the console

[Service]
Type=oneshot
ExecStart=${BOOT_MEASUREMENTS_SCRIPT_PATH}
StandardOutput=tty
TTYPath=/dev/console
TTYReset=no
TTYVHangup=no
StandardError=journal
PrivateTmp=yes

[Install]
WantedBy=multi-user.target
`;

/** The node's programs log to the serial console too: a VM's console is where its host reads why. */
export const CONSOLE_OUTPUT_DROP_IN = `# The node's own programs on the console as well as in the journal: the console of a VM is
# where its host reads what happened.
[Service]
StandardOutput=journal+console
StandardError=journal+console
`;

/** DHCP on every Ethernet NIC (systemd-networkd); DNS through systemd-resolved. */
export const NETWORK_CONFIG = `# Every Ethernet NIC (not CNI's veths or bridges) gets its address by DHCP.
[Match]
Name=en* eth*

[Network]
DHCP=yes
`;

/**
 * network-online.target (the bootstrapper waits for it) once any link is up, within 60 s: without a
 * NIC or DHCP, systemd-networkd-wait-online's default waits 2 min for every link.
 */
export const WAIT_ONLINE_DROP_IN = `[Service]
ExecStart=
ExecStart=/lib/systemd/systemd-networkd-wait-online --any --timeout=60
`;

/**
 * What kubeadm's preflight and kube-proxy expect of the kernel, and the kernel settings the kubelet
 * enforces when the cluster sets protectKernelDefaults (ours does: the kubelet refuses to start
 * on a node whose kernel differs, rather than change them itself).
 */
export const KUBERNETES_SYSCTL = `# Kubernetes: routing between pods, bridged traffic through iptables/nftables.
net.ipv4.ip_forward = 1
net.bridge.bridge-nf-call-iptables = 1
net.bridge.bridge-nf-call-ip6tables = 1
# The kubelet's protectKernelDefaults: it checks these and does not start when they differ.
vm.overcommit_memory = 1
vm.panic_on_oom = 0
kernel.panic = 10
kernel.panic_on_oops = 1
kernel.keys.root_maxkeys = 1000000
kernel.keys.root_maxbytes = 25000000
`;

export const KUBERNETES_MODULES = `# containerd's overlayfs snapshotter; bridged traffic through netfilter (sysctl above); dm-crypt
# for the state disk, which the bootstrapper maps (--state-mount).
overlay
br_netfilter
dm_crypt
`;

/** /etc/fstab: nothing (the initrd mounts everything; see initrd/init.sh). */
export const FSTAB = `# The node image mounts nothing from here. Its initrd (tools/node-image/initrd/init.sh) has already
# mounted / (squashfs through dm-verity, read-only), and tmpfs on /run, /var, /tmp,
# /etc/kubernetes and /etc/cni/net.d. The bootstrapper maps the state disk (dm-crypt), mounts it on
# /run/state and binds /etc/kubernetes and /var/lib/kubelet from it.
`;

/**
 * What the host may pass a node in QEMU's firmware configuration (fw_cfg items
 * opt/constellation/<name>), as a cloud passes instance data: outside every measurement, so
 * nothing here is trusted: the bootstrapper proves itself and checks its peers whatever the host
 * says. Each item has one fixed destination, and only the variables named here reach the units'
 * environment (a host-chosen LD_PRELOAD or NODE_OPTIONS would run code in the bootstrapper).
 */
export const INSTANCE_DATA = {
  script: '/usr/lib/constellation/apply-instance-data',
  unit: 'constellation-instance-data.service',
  fwCfgDir: '/sys/firmware/qemu_fw_cfg/by_name/opt/constellation',
  environment: ['CONSTELLATION_METADATA_URL', 'CONSTELLATION_MANIFEST_URL'],
  items: {
    /** KEY=VALUE lines for /run/constellation.env (the bootstrapper's EnvironmentFile). */
    env: '/run/constellation.env',
    /** A systemd-networkd .network file: the node's address and routes (no DHCP server on mini's bridge). */
    network: '/run/systemd/network/10-constellation.network',
    /** /etc/hosts (bind-mounted over the read-only image's): the cluster's node names. */
    hosts: '/run/constellation/hosts',
    /** The node's hostname (transient; /etc is read-only). */
    hostname: '/proc/sys/kernel/hostname',
    /** The pod network's CNI configuration, as a CNI add-on would write it. */
    cni: '/etc/cni/net.d/10-constellation.conflist',
  },
} as const;

export const INSTANCE_DATA_SCRIPT = `#!/bin/sh
# Applies the instance data the host passed in QEMU's fw_cfg (opt/constellation/*), each item to
# its one fixed place. Not measured and not trusted (see tools/node-image/rootfs-files.ts): values
# are checked for shape, and only the allowed variables reach the units' environment.
set -eu
say() { echo "constellation-instance-data: $*"; }
modprobe qemu_fw_cfg 2>/dev/null || true
base=${INSTANCE_DATA.fwCfgDir}
if [ ! -d "$base" ]; then
  say "no instance data (no fw_cfg items under opt/constellation): nothing applied"
  exit 0
fi
item() { cat "$base/$1/raw" 2>/dev/null; }
has() { [ -r "$base/$1/raw" ]; }
mkdir -p /run/constellation /run/systemd/network

if has env; then
  item env | grep -E '^(${INSTANCE_DATA.environment.join('|')})=[A-Za-z0-9:/._{}%-]+$' >${INSTANCE_DATA.items.env}.new || true
  dropped=$(item env | grep -cvE '^(${INSTANCE_DATA.environment.join('|')})=[A-Za-z0-9:/._{}%-]+$' || true)
  [ "$dropped" = 0 ] || say "ignored $dropped line(s) of env: only ${INSTANCE_DATA.environment.join(', ')} with URL characters are taken"
  chmod 0644 ${INSTANCE_DATA.items.env}.new
  mv -f ${INSTANCE_DATA.items.env}.new ${INSTANCE_DATA.items.env}
  say "environment: $(cut -d= -f1 ${INSTANCE_DATA.items.env} | tr '\\n' ' ')"
fi
if has hostname; then
  name=$(item hostname | tr -d '\\n')
  if echo "$name" | grep -qE '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'; then
    echo "$name" >${INSTANCE_DATA.items.hostname}
    say "hostname: $name"
  else
    say "ignored hostname: not a DNS label"
  fi
fi
if has hosts; then
  item hosts >${INSTANCE_DATA.items.hosts}
  chmod 0644 ${INSTANCE_DATA.items.hosts}
  mount --bind ${INSTANCE_DATA.items.hosts} /etc/hosts
  say "/etc/hosts: $(grep -c . ${INSTANCE_DATA.items.hosts}) line(s)"
fi
if has network; then
  item network >${INSTANCE_DATA.items.network}
  chmod 0644 ${INSTANCE_DATA.items.network}
  say "network: ${INSTANCE_DATA.items.network}"
fi
if has cni; then
  item cni >${INSTANCE_DATA.items.cni}
  chmod 0644 ${INSTANCE_DATA.items.cni}
  say "pod network: ${INSTANCE_DATA.items.cni}"
fi
`;

/**
 * Runs early (before the network and every node unit), once per boot: the data lives in /run and
 * in the tmpfs mounts the initrd made.
 */
export const INSTANCE_DATA_UNIT = `# Applies the instance data the host passed in QEMU's fw_cfg (see the script).
[Unit]
Description=Apply the instance data the host passed (QEMU fw_cfg)
DefaultDependencies=no
After=systemd-modules-load.service
Before=network-pre.target systemd-networkd.service systemd-hostnamed.service containerd.service constellation-node-prep.service constellation-bootstrapper.service kubelet.service
Wants=network-pre.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=${INSTANCE_DATA.script}
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=sysinit.target
`;

/**
 * The node image's bootstrapper flags, over the .deb's unit: the trust files the image carries, node
 * preparation from the artifact host the instance data names (the manifest is signed: the host may
 * name the URL, not what is installed), and the LUKS key slots' KDF. The state disk's keys are 32
 * random bytes, so a memory-hard KDF adds nothing against guessing and costs seconds and hundreds of
 * MiB per key slot on a small VM: PBKDF2 at its minimum. The state disk is the virtio disk whose
 * serial is `state` (udev names it), a disk of its own as on the clouds, not a partition; the
 * bootstrapper maps it with dm-crypt and mounts it on /run/state (node preparation's programs),
 * binding /etc/kubernetes and /var/lib/kubelet from it, so a rebooted node finds them, encrypted.
 */
export const bootstrapperDropIn = (
  ekIntermediates: string | undefined,
): string => `# The node image's settings for the bootstrapper (tools/node-image/rootfs-files.ts).
[Service]
# Overridden by /run/constellation.env (the instance data) when it names one.
Environment=CONSTELLATION_MANIFEST_URL=https://artifacts.constellation.invalid/manifests/{{.Board}}/{{.OSVersion}}/{{.KubernetesVersion}}.json
ExecStart=
ExecStart=/usr/bin/constellation-bootstrapper --metadata-url=\${CONSTELLATION_METADATA_URL} --state-disk=/dev/disk/by-id/virtio-state --ek-roots=/etc/constellation/ek-roots.pem${ekIntermediates === undefined ? '' : ` --ek-intermediates=${ekIntermediates}`} --manifest-url=\${CONSTELLATION_MANIFEST_URL} --disk-kdf=fast --state-mount=/run/state
`;
