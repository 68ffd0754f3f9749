#!/usr/bin/env bash
# A real Debian 12 node under QEMU, built only from Debian's packages, for
# tests and for anyone trying mcgit on a real host (docs/development.md,
# "The VM test bed"). Run as root.
#
#   tests/vm/vm.sh image DIR
#       Build (or reuse) DIR/base.qcow2: `debootstrap --variant=minbase
#       bookworm` with systemd, linux-image-cloud-amd64, initramfs-tools,
#       openssh-server, qemu-guest-agent, git, GRUB (installed in the disk's
#       MBR: kernel arguments go through it) and the mcgit .deb of this tree
#       (deploy/debian/build-deb.sh, or MCGIT_VM_DEB=FILE). The root file
#       system is made by `mkfs.ext4 -d`: no loop device. Cached in two
#       layers keyed by their inputs: the debootstrapped root by the
#       packages' candidate versions (MCGIT_VM_CACHE, default
#       /var/cache/mcgit-vm), the disk by that and the .deb's SHA-256.
#   tests/vm/vm.sh start DIR NAME [--cluster-dir HOSTDIR] [--uuid UUID]
#                        [--share HOSTDIR] [--fwd IP:PORT=HOSTPORT]...
#       Boot NAME from its copy-on-write overlay of DIR's image (made on the
#       first start, kept across reboot and cut) and return once the guest
#       has reached multi-user.target, printing `machine-id: ...`,
#       `boot-id: ...` and `uuid: ...`. With --cluster-dir HOSTDIR shared in
#       (virtiofs) at /var/lib/mcgit/cluster, the guest's packaged
#       mcgit-agent.service manages node NAME of local:HOSTDIR, bound to the
#       guest's machine-id (`mcgit node add` or `bind`, run in the guest).
#       --share HOSTDIR: shared (virtiofs, tag mcgitshare) for the guest to
#       mount, nothing more (tests/kube/cluster.sh). --fwd: a network device
#       on QEMU's user network with restrict=on (the guest reaches neither
#       the host nor anything beyond), except that a TCP connection to
#       IP:PORT (in 10.0.2.0/24, the guest being 10.0.2.15) is carried to
#       127.0.0.1:HOSTPORT on this host (socat, one per connection).
#   tests/vm/vm.sh exec NAME [-i] [-t SECONDS] -- CMD...   CMD as root in the
#       guest (through qemu-guest-agent): its stdout, stderr and exit status
#       (-i: this stdin is CMD's; -t: give up after SECONDS, exit 124)
#   tests/vm/vm.sh reboot NAME           a clean reboot, waiting for multi-user
#   tests/vm/vm.sh wait-boot NAME OLD_BOOT_ID   wait for a reboot the guest
#       started itself (the agent's), back at multi-user
#   tests/vm/vm.sh cut NAME              a power cut: QEMU killed at once
#   tests/vm/vm.sh fsck NAME [--cat PATH]...   e2fsck -fn of NAME's root (after a
#       cut, before the next boot), on a copy whose journal is replayed
#       first, as the next mount does; then each PATH's bytes on that disk
#   tests/vm/vm.sh stop NAME             power off, remove NAME's overlay
#   tests/vm/vm.sh accel [DIR]           print the accelerator start would use
#
# No network: without --fwd the guest has no network device at all. The cluster directory
# is shared by virtiofs, commands run through qemu-guest-agent on a virtio-serial
# port, the console goes to a file (NAME.console). One vCPU, MCGIT_VM_MEM MiB
# (default 512). KVM is used only when the image's kernel boots under it
# within a deadline; otherwise TCG (MCGIT_VM_ACCEL=tcg|kvm forces one).
# A guest's files live in MCGIT_VM_RUN (default /var/tmp/mcgit-vm), keyed by
# NAME: NAME.qcow2, NAME.pid, NAME.qga, NAME.console, NAME.env, NAME.vfs.
# MCGIT_VM_EXTRA_PKGS: more Debian packages in the image (its cache key
# changes with them: give it its own MCGIT_VM_CACHE and image DIR).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
cache=${MCGIT_VM_CACHE:-/var/cache/mcgit-vm}
run=${MCGIT_VM_RUN:-/var/tmp/mcgit-vm}
mem=${MCGIT_VM_MEM:-512}
boot_timeout=${MCGIT_VM_BOOT_TIMEOUT:-300}
qga=$here/qga.py
virtiofsd=${MCGIT_VM_VIRTIOFSD:-/usr/lib/qemu/virtiofsd}
log() { printf 'vm: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# mirror: MCGIT_DEBIAN_MIRROR, else the host's first Debian source
mirror() {
  if [ -n "${MCGIT_DEBIAN_MIRROR:-}" ]; then echo "$MCGIT_DEBIAN_MIRROR"; return; fi
  local u
  u=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | sed -n 's/^URIs: *\([^ ]*\/debian\)$/\1/p' | head -1)
  [ -n "$u" ] || u=$(grep -hs '^deb ' /etc/apt/sources.list | awk '$2 ~ /\/debian$/ {print $2; exit}')
  [ -n "$u" ] || die "no Debian mirror: set MCGIT_DEBIAN_MIRROR"
  echo "$u"
}

# The guest's packages (besides debootstrap's minbase and the .deb's own
# dependencies): systemd as init, the cloud kernel (virtio, virtiofs), GRUB's
# BIOS modules and update-grub, sshd, the guest agent, git (scenario 6).
PKGS="systemd systemd-sysv udev kmod dbus linux-image-cloud-amd64 initramfs-tools e2fsprogs
      grub-pc-bin grub2-common openssh-server openssh-client qemu-guest-agent git procps
      ${MCGIT_VM_EXTRA_PKGS:-}"

# ------------------------------------------------------------------ image
# stage 1: the debootstrapped root as a tarball, keyed by the packages'
# candidate versions on this host's apt (the same mirror) and this script's
# stage-1 recipe
root_key() {
  local v
  v=$(apt-cache policy $PKGS 2>/dev/null | awk '/^[^ ]/{p=$1} /Candidate:/{print p, $2}')
  printf '%s\n%s\n%s\n' "root-v1" "$PKGS" "$v" | sha256sum | cut -c1-16
}

build_root() {
  local tarball=$1 tmp m
  m=$(mirror)
  tmp=$(mktemp -d /var/tmp/mcgit-vm-root.XXXXXX)
  log "debootstrap bookworm ($m), about 5 minutes"
  # shellcheck disable=SC2086
  if ! debootstrap --variant=minbase --include="$(echo $PKGS | tr ' ' ,)" bookworm "$tmp" "$m" \
      >"$tmp.log" 2>&1; then
    tail -20 "$tmp.log" >&2; rm -rf "$tmp" "$tmp.log"; die "debootstrap failed"
  fi
  rm -f "$tmp.log"
  chroot "$tmp" apt-get clean
  tar -C "$tmp" --numeric-owner --xattrs -czf "$tarball.part" . && mv "$tarball.part" "$tarball"
  rm -rf "$tmp"
}

# configure_root ROOT DEB FSUUID: the .deb, the user core, sshd's key file,
# GRUB's configuration, an empty machine-id (each guest makes its own)
configure_root() {
  local r=$1 deb=$2 uuid=$3 kver
  cp -L /etc/resolv.conf "$r/etc/resolv.conf"
  cp "$deb" "$r/tmp/mcgit.deb"
  mount -t proc proc "$r/proc"
  local rc=0
  chroot "$r" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    /tmp/mcgit.deb >"$r/tmp/apt.log" 2>&1 || rc=$?
  umount "$r/proc"
  [ "$rc" = 0 ] || { tail -20 "$r/tmp/apt.log" >&2; die "installing the .deb in the guest failed"; }
  chroot "$r" apt-get clean
  rm -f "$r/tmp/mcgit.deb" "$r/tmp/apt.log" "$r/etc/resolv.conf"
  echo vm >"$r/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 vm\n' >"$r/etc/hosts"
  printf 'UUID=%s / ext4 errors=remount-ro 0 1\n' "$uuid" >"$r/etc/fstab"
  : >"$r/etc/machine-id"
  rm -f "$r/var/lib/dbus/machine-id"
  chroot "$r" useradd -m -u 1000 -s /bin/bash core
  chroot "$r" usermod -p '*' core   # no password, not locked: ssh keys only
  echo 'root:*' | chroot "$r" chpasswd -e
  # sshd reads the key file the agent writes, authorized_keys.d/ignition as on
  # RHCOS (where ssh-key-dir reads authorized_keys.d/*): docs/agent.md
  cat >"$r/etc/ssh/sshd_config.d/mcgit.conf" <<'EOF'
AuthorizedKeysFile .ssh/authorized_keys .ssh/authorized_keys.d/ignition
EOF
  # the agent's messages on the console too (the power-cut test reads them there)
  mkdir -p "$r/etc/systemd/system/mcgit-agent.service.d"
  printf '[Service]\nStandardError=journal+console\n' \
    >"$r/etc/systemd/system/mcgit-agent.service.d/console.conf"
  cat >"$r/etc/default/grub" <<'EOF'
GRUB_DEFAULT=0
GRUB_TIMEOUT=0
GRUB_DISTRIBUTOR=Debian
GRUB_CMDLINE_LINUX_DEFAULT=""
GRUB_CMDLINE_LINUX="console=ttyS0"
GRUB_TERMINAL=console
GRUB_DISABLE_OS_PROBER=true
EOF
  # GRUB's modules where its core image looks for them; grub.cfg as
  # update-grub writes it (update-grub itself needs the booted disk: the
  # agent runs it in the guest for kernel arguments)
  mkdir -p "$r/boot/grub/i386-pc"
  cp "$r"/usr/lib/grub/i386-pc/*.mod "$r"/usr/lib/grub/i386-pc/*.lst "$r/boot/grub/i386-pc/"
  kver=$(basename "$(ls "$r"/boot/vmlinuz-* | sort -V | tail -1)")
  kver=${kver#vmlinuz-}
  cat >"$r/boot/grub/grub.cfg" <<EOF
# written by tests/vm/vm.sh image; the agent's update-grub replaces it
set default=0
set timeout=0
insmod part_msdos
insmod ext2
search --no-floppy --fs-uuid --set=root $uuid
menuentry 'Debian GNU/Linux' {
  linux /boot/vmlinuz-$kver root=UUID=$uuid ro console=ttyS0
  initrd /boot/initrd.img-$kver
}
EOF
}

# make_disk ROOT OUT FSUUID: MBR, GRUB's boot.img and core.img before the
# first partition (where grub-install puts them), ext4 from the tree
make_disk() {
  local r=$1 out=$2 uuid=$3 size=3G work
  work=$(dirname "$out")
  chroot "$r" grub-mkimage -O i386-pc -o /tmp/core.img -p '(hd0,msdos1)/boot/grub' \
    biosdisk part_msdos ext2 search search_fs_uuid normal
  mv "$r/tmp/core.img" "$work/core.img"
  cp "$r/usr/lib/grub/i386-pc/boot.img" "$work/boot.img"
  rm -f "$work/disk.raw" "$work/part.raw"
  truncate -s "$size" "$work/disk.raw"
  local sectors
  sectors=$(( $(stat -c %s "$work/disk.raw") / 512 - 2048 ))
  # the MBR's one partition: bootable, Linux, LBA 2048 to the end
  python3 - "$work/disk.raw" "$sectors" <<'PY'
import struct, sys
entry = struct.pack("<B3sB3sII", 0x80, b"\xfe\xff\xff", 0x83, b"\xfe\xff\xff", 2048, int(sys.argv[2]))
with open(sys.argv[1], "r+b") as f:
    f.seek(446); f.write(entry + b"\0" * 48 + b"\x55\xaa")
PY
  truncate -s $((sectors * 512)) "$work/part.raw"
  mkfs.ext4 -q -F -U "$uuid" -L root -d "$r" "$work/part.raw"
  dd if="$work/part.raw" of="$work/disk.raw" bs=1M seek=1 conv=notrunc,sparse status=none
  rm -f "$work/part.raw"
  # boot.img's code (its first 440 bytes: the partition table stays), then
  # core.img from sector 1: their default block lists point there
  dd if="$work/boot.img" of="$work/disk.raw" bs=440 count=1 conv=notrunc status=none
  dd if="$work/core.img" of="$work/disk.raw" bs=512 seek=1 conv=notrunc status=none
  qemu-img convert -O qcow2 "$work/disk.raw" "$out"
  rm -f "$work/disk.raw" "$work/core.img" "$work/boot.img"
}

cmd_image() {
  local dir=${1:?usage: vm.sh image DIR}
  [ "$(id -u)" = 0 ] || die "image: must run as root (debootstrap, chroot)"
  mkdir -p "$dir" "$cache"
  dir=$(cd "$dir" && pwd)
  local t0 deb key rkey tarball
  t0=$(date +%s)
  if [ -n "${MCGIT_VM_DEB:-}" ]; then deb=$MCGIT_VM_DEB
  else
    log "building the .deb (deploy/debian/build-deb.sh)"
    deb=$(MCGIT_DEB_NO_LINTIAN=1 "$src/deploy/debian/build-deb.sh" "$dir/deb" | tail -1)
  fi
  [ -f "$deb" ] || die "no .deb: $deb"
  rkey=$(root_key)
  tarball=$cache/root-$rkey.tgz
  [ -s "$tarball" ] || { find "$cache" -name 'root-*.tgz' -delete; build_root "$tarball"; }
  key=$(printf '%s\n%s\n%s\n' "$rkey" "$(sha256sum <"$deb")" "$(declare -f configure_root make_disk | sha256sum)" | sha256sum | cut -c1-16)
  if [ -s "$dir/base.qcow2" ] && [ -f "$dir/vmlinuz" ] && [ "$(cat "$dir/base.key" 2>/dev/null)" = "$key" ]; then
    log "image $dir/base.qcow2 is current ($key)"
    echo "$dir/base.qcow2"; return 0
  fi
  local r uuid
  r=$(mktemp -d /var/tmp/mcgit-vm-img.XXXXXX)
  # shellcheck disable=SC2064
  trap "mountpoint -q '$r/proc' && umount '$r/proc'; rm -rf '$r'" EXIT
  tar -C "$r" --numeric-owner --xattrs -xzf "$tarball"
  uuid=$(cat /proc/sys/kernel/random/uuid)
  configure_root "$r" "$deb" "$uuid"
  make_disk "$r" "$dir/base.qcow2.part" "$uuid"
  mv "$dir/base.qcow2.part" "$dir/base.qcow2"
  cp "$(ls "$r"/boot/vmlinuz-* | sort -V | tail -1)" "$dir/vmlinuz"   # for the KVM probe
  echo "$key" >"$dir/base.key"
  dpkg-query --admindir="$r/var/lib/dpkg" -W >"$dir/base.packages"
  log "image $dir/base.qcow2 built in $(($(date +%s) - t0)) s"
  echo "$dir/base.qcow2"
}

# ------------------------------------------------------------------ guests
# accel [KERNEL]: kvm when the image's kernel (DIR/vmlinuz), booted under KVM
# without a root, reaches its panic within 20 s (here KVM hangs in the
# kernel's early boot: under TCG this takes 4 s), else tcg; remembered in
# $cache/accel. A guest
# that then does not answer under KVM within MCGIT_VM_KVM_DEADLINE seconds
# (default 90) is restarted under TCG, and tcg remembered (cmd_start).
accel() {
  if [ -n "${MCGIT_VM_ACCEL:-}" ]; then echo "$MCGIT_VM_ACCEL"; return; fi
  mkdir -p "$cache"
  if [ -s "$cache/accel" ]; then cat "$cache/accel"; return; fi
  local a=tcg k=${1:-}
  if [ -r /dev/kvm ] && [ -w /dev/kvm ] && [ -f "$k" ] &&
     timeout -k 2 20 qemu-system-x86_64 -accel kvm -nodefaults -display none -nic none -m 256 \
       -serial stdio -no-reboot -kernel "$k" -append "console=ttyS0 panic=-1 quiet" 2>/dev/null |
       grep -q 'Kernel panic'; then
    a=kvm
  fi
  echo "$a" >"$cache/accel"
  echo "$a"
}

pidof_guest() {
  local p
  p=$(cat "$run/$1.pid" 2>/dev/null) || return 1
  [ -n "$p" ] && kill -0 "$p" 2>/dev/null && echo "$p"
}

# qemu_start NAME: NAME's QEMU from the settings in NAME.env, daemonized
qemu_start() {
  local n=$1 a
  # shellcheck disable=SC1090
  . "$run/$n.env"
  a=$(accel "$VM_DIR/vmlinuz")
  local args=(-name "$n" -machine pc,accel="$a" -smp 1 -m "$mem" -nodefaults -no-user-config
    -display none -vga none -nic none -boot c -uuid "$VM_UUID"
    -drive file="$run/$n.qcow2",format=qcow2,if=virtio,cache=writeback
    -chardev file,id=con,path="$run/$n.console",append=on -serial chardev:con
    -device virtio-serial -chardev socket,id=qga,path="$run/$n.qga",server=on,wait=off
    -device virtserialport,chardev=qga,name=org.qemu.guest_agent.0
    -pidfile "$run/$n.pid" -daemonize)
  if [ -n "$VM_CLUSTER" ]; then
    # virtiofs (the cloud kernel has no 9p), served by QEMU's virtiofsd,
    # which exits with QEMU. Its locks are the guest's own: this virtiofsd
    # refuses blocking ones (EOPNOTSUPP), so the local backend's flock()
    # does not exclude writers on this host (see docs/development.md)
    rm -f "$run/$n.vfs"
    setsid "$virtiofsd" -f --socket-path="$run/$n.vfs" -o source="$VM_CLUSTER" -o cache=none \
      -o sandbox=chroot -o log_level=warn </dev/null >>"$run/$n.vfs.log" 2>&1 &
    echo $! >"$run/$n.vfs.pid"
    local i
    for ((i = 0; i < 100; i++)); do [ -S "$run/$n.vfs" ] && break; sleep 0.1; done
    [ -S "$run/$n.vfs" ] || { cat "$run/$n.vfs.log" >&2; die "$n: virtiofsd did not start"; }
    args+=(-object "memory-backend-memfd,id=mem,size=${mem}M,share=on" -numa node,memdev=mem
      -chardev socket,id=vfs,path="$run/$n.vfs" -device vhost-user-fs-pci,chardev=vfs,tag=mcgitcluster)
  fi
  if [ -n "${VM_SHARE:-}" ]; then
    rm -f "$run/$n.share"
    setsid "$virtiofsd" -f --socket-path="$run/$n.share" -o source="$VM_SHARE" -o cache=none \
      -o sandbox=chroot -o log_level=warn </dev/null >>"$run/$n.share.log" 2>&1 &
    echo $! >"$run/$n.share.pid"
    local j
    for ((j = 0; j < 100; j++)); do [ -S "$run/$n.share" ] && break; sleep 0.1; done
    [ -S "$run/$n.share" ] || { cat "$run/$n.share.log" >&2; die "$n: virtiofsd (share) did not start"; }
    [ -n "$VM_CLUSTER" ] || args+=(-object "memory-backend-memfd,id=mem,size=${mem}M,share=on" -numa node,memdev=mem)
    args+=(-chardev socket,id=share,path="$run/$n.share" -device vhost-user-fs-pci,chardev=share,tag=mcgitshare)
  fi
  if [ -n "${VM_FWD:-}" ]; then
    local f nd="user,id=net0,restrict=on,net=10.0.2.0/24,host=10.0.2.2,dhcpstart=10.0.2.15"
    for f in $VM_FWD; do
      nd="$nd,guestfwd=tcp:${f%%=*}-cmd:socat STDIO TCP:127.0.0.1:${f#*=}"
    done
    args+=(-netdev "$nd" -device virtio-net-pci,netdev=net0)
  fi
  rm -f "$run/$n.qga"
  echo "=== vm.sh: power on ($a) $(date -u +%FT%TZ)" >>"$run/$n.console"
  qemu-system-x86_64 "${args[@]}" 2>"$run/$n.qemu.log" ||
    { cat "$run/$n.qemu.log" >&2; die "$n: QEMU did not start"; }
}

gexec() { local n=$1; shift; python3 "$qga" "$run/$n.qga" exec -- "$@"; }

# wait_up NAME [OLD_BOOT_ID]: the guest agent answers, multi-user.target is
# active (and the boot id is not OLD_BOOT_ID)
wait_up() {
  local n=$1 old=${2:-} deadline b
  deadline=$(($(date +%s) + boot_timeout))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    pidof_guest "$n" >/dev/null || { tail -20 "$run/$n.console" >&2; die "$n: QEMU exited while booting"; }
    if python3 "$qga" "$run/$n.qga" ping 5 2>/dev/null; then
      b=$(gexec "$n" cat /proc/sys/kernel/random/boot_id 2>/dev/null) || b=
      if [ -n "$b" ] && [ "$b" != "$old" ] &&
         [ "$(gexec "$n" systemctl is-active multi-user.target 2>/dev/null)" = active ]; then
        return 0
      fi
    fi
    sleep 1
  done
  tail -30 "$run/$n.console" >&2
  die "$n: not at multi-user.target after $boot_timeout s"
}

identity() {
  local n=$1
  echo "machine-id: $(gexec "$n" cat /etc/machine-id)"
  echo "boot-id: $(gexec "$n" cat /proc/sys/kernel/random/boot_id)"
  echo "uuid: $(gexec "$n" cat /sys/class/dmi/id/product_uuid)"
}

# join NAME: the cluster directory mounted at /var/lib/mcgit/cluster, node
# NAME added (or bound) with this guest's machine-id, the packaged agent
# enabled and started
join() {
  local n=$1
  gexec "$n" sh -euc '
    n=$1; c=/var/lib/mcgit/cluster
    hostnamectl set-hostname "$n"
    mkdir -p "$c"
    grep -q mcgitcluster /etc/fstab ||
      echo "mcgitcluster $c virtiofs defaults 0 0" >>/etc/fstab
    mountpoint -q "$c" || mount "$c"
    sed -i -e "/^#\{0,1\}MCGIT_NODE=/d" -e "/^MCGIT_INTERVAL=/d" -e "/^MCGIT_CLUSTER=/d" /etc/default/mcgit
    printf "MCGIT_NODE=%s\nMCGIT_CLUSTER=local:%s\nMCGIT_INTERVAL=%s\n" "$n" "$c" "$2" >>/etc/default/mcgit
    if [ -e "$c/nodes/$n.json" ] || mcgit node list --cluster "local:$c" | grep -q "^$n\b"; then
      mcgit node bind --cluster "local:$c" "$n"
    else
      mcgit node add --cluster "local:$c" "$n" --labels node-role.kubernetes.io/worker= \
        --machine-id "$(cat /etc/machine-id)"
    fi
    systemctl enable --now mcgit-agent.service
    sync' sh "$n" "${MCGIT_VM_INTERVAL:-5}" >&2
}

cmd_start() {
  local dir=${1:?usage: vm.sh start DIR NAME [--cluster-dir HOSTDIR] [--uuid UUID]}
  local n=${2:?usage: vm.sh start DIR NAME [--cluster-dir HOSTDIR] [--uuid UUID]}
  shift 2
  local cl= uuid= share= fwd=
  while [ $# -gt 0 ]; do
    case $1 in
      --cluster-dir) cl=$(cd "${2:?--cluster-dir HOSTDIR}" && pwd); shift 2 ;;
      --share) share=$(cd "${2:?--share HOSTDIR}" && pwd); shift 2 ;;
      --fwd) [[ ${2:-} =~ ^10\.0\.2\.[0-9]+:[0-9]+=[0-9]+$ ]] || die "start: --fwd IP:PORT=HOSTPORT (IP in 10.0.2.0/24)"
        fwd="$fwd $2"; shift 2 ;;
      --uuid) uuid=${2:?--uuid UUID}; shift 2 ;;
      *) die "start: unknown option $1" ;;
    esac
  done
  [ -s "$dir/base.qcow2" ] || die "no image in $dir: run vm.sh image $dir first"
  mkdir -p "$run"
  pidof_guest "$n" >/dev/null && die "$n is running already (vm.sh stop $n)"
  if [ ! -f "$run/$n.qcow2" ]; then
    qemu-img create -q -f qcow2 -F qcow2 -b "$(cd "$dir" && pwd)/base.qcow2" "$run/$n.qcow2"
    : >"$run/$n.console"
  elif [ -f "$run/$n.env" ]; then
    # shellcheck disable=SC1090
    . "$run/$n.env"
    [ -n "$uuid" ] || uuid=$VM_UUID
    [ -n "$cl" ] || cl=$VM_CLUSTER
    [ -n "$share" ] || share=${VM_SHARE:-}
    [ -n "$fwd" ] || fwd=${VM_FWD:-}
  fi
  [ -n "$uuid" ] || uuid=$(cat /proc/sys/kernel/random/uuid)
  printf 'VM_UUID=%q\nVM_CLUSTER=%q\nVM_DIR=%q\nVM_SHARE=%q\nVM_FWD=%q\n' "$uuid" "$cl" \
    "$(cd "$dir" && pwd)" "$share" "${fwd# }" >"$run/$n.env"
  qemu_start "$n"
  if [ "$(accel "$VM_DIR/vmlinuz")" = kvm ] && [ -z "${MCGIT_VM_ACCEL:-}" ] &&
     ! python3 "$qga" "$run/$n.qga" ping "${MCGIT_VM_KVM_DEADLINE:-90}" 2>/dev/null; then
    log "$n: no answer under KVM: TCG from now on ($cache/accel)"
    kill -9 "$(cat "$run/$n.pid")" 2>/dev/null || true
    sleep 1
    stop_vfs "$n"
    echo tcg >"$cache/accel"
    qemu_start "$n"
  fi
  wait_up "$n"
  [ -z "$cl" ] || join "$n"
  identity "$n"
}

cmd_exec() {
  local n=${1:?usage: vm.sh exec NAME [-i] [-t SECONDS] -- CMD...}
  shift
  pidof_guest "$n" >/dev/null || die "$n is not running"
  exec python3 "$qga" "$run/$n.qga" exec "$@"
}

cmd_reboot() {
  local n=${1:?usage: vm.sh reboot NAME} old
  pidof_guest "$n" >/dev/null || die "$n is not running"
  old=$(gexec "$n" cat /proc/sys/kernel/random/boot_id)
  gexec "$n" systemctl reboot >/dev/null 2>&1 || true
  wait_up "$n" "$old"
  identity "$n"
}

# wait_boot NAME OLD_BOOT_ID: wait for a reboot the guest started itself
cmd_wait_boot() {
  local n=${1:?usage: vm.sh wait-boot NAME OLD_BOOT_ID} old=${2:?old boot id}
  wait_up "$n" "$old"
  identity "$n"
}

# stop_vfs NAME: NAME's virtiofsd, if it outlived its QEMU
stop_vfs() {
  local p s
  for s in vfs share; do
    p=$(cat "$run/$1.$s.pid" 2>/dev/null) || continue
    kill "$p" 2>/dev/null || true
    rm -f "$run/$1.$s.pid" "$run/$1.$s"
  done
}

cmd_cut() {
  local n=${1:?usage: vm.sh cut NAME} p
  p=$(pidof_guest "$n") || die "$n is not running"
  kill -9 "$p"
  while kill -0 "$p" 2>/dev/null; do sleep 0.1; done
  stop_vfs "$n"
  rm -f "$run/$n.pid" "$run/$n.qga"
  echo "=== vm.sh: power cut $(date -u +%FT%TZ)" >>"$run/$n.console"
}

cmd_fsck() {
  local n=${1:?usage: vm.sh fsck NAME [--cat PATH]...} rc=0 f
  shift
  pidof_guest "$n" >/dev/null && die "$n is running: cut or stop it first"
  [ -f "$run/$n.qcow2" ] || die "$n has no disk"
  rm -f "$run/$n.part"
  # the first partition (sector 2048 on), as a raw file for e2fsck
  qemu-img convert -O raw --image-opts \
    "driver=raw,offset=1048576,file.driver=qcow2,file.file.driver=file,file.file.filename=$run/$n.qcow2" \
    "$run/$n.part"
  # the journal replayed first, on this copy, as the next mount would (a
  # read-only check of an unreplayed journal reports what the replay fixes)
  e2fsck -E journal_only -p "$run/$n.part" >/dev/null 2>&1 || true
  e2fsck -fn "$run/$n.part" || rc=$?
  # the files as the power cut left them, read from the disk (debugfs)
  while [ $# -gt 0 ]; do
    [ "$1" = --cat ] && [ -n "${2:-}" ] || die "fsck: --cat PATH"
    echo "== $2"
    debugfs -R "cat $2" "$run/$n.part" 2>/dev/null || true
    echo
    shift 2
  done
  rm -f "$run/$n.part"
  return "$rc"
}

cmd_stop() {
  local n=${1:?usage: vm.sh stop NAME} p i
  if p=$(pidof_guest "$n"); then
    gexec "$n" systemctl poweroff >/dev/null 2>&1 || true
    for ((i = 0; i < 600; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  fi
  stop_vfs "$n"
  rm -f "$run/$n".{qcow2,pid,qga,env,console,qemu.log,part,vfs.log,share.log}
}

case ${1:-} in
  image) shift; cmd_image "$@" ;;
  start) shift; cmd_start "$@" ;;
  exec) shift; cmd_exec "$@" ;;
  reboot) shift; cmd_reboot "$@" ;;
  wait-boot) shift; cmd_wait_boot "$@" ;;
  cut) shift; cmd_cut "$@" ;;
  fsck) shift; cmd_fsck "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  accel) accel "${2:+$2/vmlinuz}" ;;
  *) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
