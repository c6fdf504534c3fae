#!/bin/sh
# constellation-initrd: the node image's /init (built into the UKI by tools/node-image/initrd.ts).
#
# Loads the modules for virtio disks, device-mapper and squashfs; finds the root filesystem and its
# dm-verity hash tree by their superblocks (squashfs "hsqs", verity "verity"), on whichever disks
# they are; opens them with the root hash from the kernel command line (constellation.roothash=,
# measured with the rest of the command line); mounts the verified root read-only; puts tmpfs
# where the node writes; and switches to systemd. On any failure it prints one line
# "constellation-initrd: error: …" on the console and powers off, so whoever reads the serial log
# sees why.
export PATH=/usr/bin:/usr/sbin

say() {
  echo "constellation-initrd: $*"
}

# An informational line, with the seconds since the kernel started.
step() {
  say "$* ($(uptime_s) s)"
}

fail() {
  say "error: $*"
  say "powering off"
  poweroff -f
  while :; do sleep 60; done
}

uptime_s() {
  cut -d' ' -f1 /proc/uptime
}

mount -t proc -o nosuid,nodev,noexec proc /proc || fail "could not mount /proc"
mount -t sysfs -o nosuid,nodev,noexec sysfs /sys || fail "could not mount /sys"
mount -t devtmpfs -o nosuid,mode=0755 devtmpfs /dev || fail "could not mount /dev"
step "started"

roothash=""
for word in $(cat /proc/cmdline); do
  case "$word" in
  constellation.roothash=*) roothash="${word#*=}" ;;
  esac
done
[ -n "$roothash" ] || fail "no constellation.roothash= on the kernel command line"
case "$roothash" in
*[!0-9a-f]*) fail "constellation.roothash=$roothash is not lowercase hexadecimal" ;;
esac
[ "${#roothash}" -eq 64 ] || fail "constellation.roothash=$roothash is not a SHA-256 digest (64 hex digits)"

while read -r module; do
  insmod "$module" || fail "could not load the kernel module $module"
done </etc/constellation-initrd/modules

# The disks appear as virtio-blk probes them: look again for up to 30 s.
root=""
verity=""
tries=0
while :; do
  for dev in /dev/vd* /dev/sd* /dev/nvme*n*; do
    [ -b "$dev" ] || continue
    case "$(head -c 6 "$dev" 2>/dev/null)" in
    hsqs*) [ -n "$root" ] || root="$dev" ;;
    verity) [ -n "$verity" ] || verity="$dev" ;;
    esac
  done
  [ -n "$root" ] && [ -n "$verity" ] && break
  tries=$((tries + 1))
  if [ "$tries" -ge 300 ]; then
    seen=$(ls /dev/vd* /dev/sd* /dev/nvme* 2>/dev/null | tr '\n' ' ')
    fail "no disk with the root filesystem (squashfs: ${root:-none}) and its dm-verity hash tree (${verity:-none}) after 30 s; block devices: ${seen:-none}"
  fi
  sleep 0.1
done
step "root filesystem on $root, dm-verity hash tree on $verity"

# The kernel device of a device-mapper name (devtmpfs makes /dev/dm-N; no udev here).
dm_device() {
  for block in /sys/block/dm-*; do
    [ "$(cat "$block/dm/name" 2>/dev/null)" = "$1" ] && echo "/dev/${block##*/}" && return 0
  done
  return 1
}

# libdevmapper without udev: it makes its own nodes and waits for no udev event.
export DM_DISABLE_UDEV=1
mkdir -p /run/cryptsetup
# First a check: the root hash must match the hash tree, or reading the first block fails. Then the
# real mapping, which panics on any corrupted block read later (a changed root never runs).
if ! veritysetup open "$root" verity-check "$verity" "$roothash" 2>/tmp/veritysetup.err; then
  fail "veritysetup open failed for $root with hash tree $verity and root hash $roothash: $(tr '\n' ' ' </tmp/veritysetup.err)"
fi
check=$(dm_device verity-check) || fail "veritysetup opened verity-check but no /dev/dm-* device carries it"
if ! dd if="$check" of=/dev/null bs=4096 count=1 2>/dev/null; then
  veritysetup close verity-check
  fail "dm-verity: root hash mismatch: $roothash (kernel command line) does not match the hash tree on $verity for $root; the root filesystem or its hash tree was changed, or they belong to another image"
fi
veritysetup close verity-check || fail "veritysetup close verity-check failed"
if ! veritysetup open "$root" root "$verity" "$roothash" --panic-on-corruption 2>/tmp/veritysetup.err; then
  fail "veritysetup open failed for $root: $(tr '\n' ' ' </tmp/veritysetup.err)"
fi
device=$(dm_device root) || fail "veritysetup opened root but no /dev/dm-* device carries it"
mount -t squashfs -o ro "$device" /sysroot || fail "could not mount the verified root filesystem ($device) on /sysroot"
step "root filesystem verified by dm-verity (root hash $roothash), mounted read-only"

# Writable places, all in memory until the state disk is mapped: /run, /var (a copy of the image's),
# /tmp, and where kubeadm (/etc/kubernetes) and CNI add-ons (/etc/cni/net.d) write.
mount -t tmpfs -o mode=0755,nosuid,nodev,size=20%,nr_inodes=800k tmpfs /sysroot/run || fail "could not mount /run"
mkdir -p /var.new
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /var.new || fail "could not mount a tmpfs for /var"
# The package database (most of /var's bytes, read through dm-verity) is not copied: it stays the
# image's, read-only, bind-mounted into the copy. Nothing on a running node installs packages.
readonly_var="lib/dpkg lib/apt cache/debconf cache/apt"
copy_var() { # <directory below /var, or nothing for /var itself>
  local entry relative
  for entry in "/sysroot/var${1:+/$1}"/* "/sysroot/var${1:+/$1}"/.[!.]*; do
    [ -e "$entry" ] || [ -L "$entry" ] || continue
    relative="${1:+$1/}${entry##*/}"
    case " $readonly_var " in
    *" $relative "*)
      mkdir -p "/var.new/$relative" && mount -o bind "$entry" "/var.new/$relative" ||
        fail "could not bind-mount the image's /var/$relative"
      ;;
    *" $relative/"*) mkdir -p "/var.new/$relative" && copy_var "$relative" ;;
    *) cp -a "$entry" "/var.new/$relative" || fail "could not copy the image's /var/$relative into memory" ;;
    esac
  done
}
copy_var
mount -o move /var.new /sysroot/var || fail "could not move the tmpfs to /var"
step "/var copied into memory"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /sysroot/tmp || fail "could not mount /tmp"
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /sysroot/etc/kubernetes || fail "could not mount /etc/kubernetes"
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /sysroot/etc/cni/net.d || fail "could not mount /etc/cni/net.d"

# /sbin/init is an absolute link (to /lib/systemd/systemd): it resolves only inside the new root.
[ -L /sysroot/sbin/init ] || [ -x /sysroot/sbin/init ] || fail "the root filesystem has no /sbin/init"
step "switching to systemd"
mount -o move /dev /sysroot/dev || fail "could not move /dev"
mount -o move /sys /sysroot/sys || fail "could not move /sys"
mount -o move /proc /sysroot/proc || fail "could not move /proc"
exec switch_root /sysroot /sbin/init
