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
 * /etc/cni/net.d is a tmpfs (the initrd mounts it): a CNI add-on writes its configuration there.
 */
export const CONTAINERD_CONFIG = `# containerd 2 (configuration version 3) on a systemd node: the systemd cgroup driver, as the kubelet's.
version = 3
root = '/var/lib/containerd'
state = '/run/containerd'

[grpc]
  address = '/run/containerd/containerd.sock'

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'

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

/** What kubeadm's preflight and kube-proxy expect of the kernel. */
export const KUBERNETES_SYSCTL = `# Kubernetes: routing between pods, bridged traffic through iptables/nftables.
net.ipv4.ip_forward = 1
net.bridge.bridge-nf-call-iptables = 1
net.bridge.bridge-nf-call-ip6tables = 1
`;

export const KUBERNETES_MODULES = `# containerd's overlayfs snapshotter; bridged traffic through netfilter (sysctl above).
overlay
br_netfilter
`;

/** /etc/fstab: nothing (the initrd mounts everything; see initrd/init.sh). */
export const FSTAB = `# The node image mounts nothing from here. Its initrd (tools/node-image/initrd/init.sh) has already
# mounted / (squashfs through dm-verity, read-only), and tmpfs on /run, /var, /tmp,
# /etc/kubernetes and /etc/cni/net.d.
`;
