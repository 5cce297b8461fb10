#!/bin/bash
# Boot a Debian kernel under qemu (TCG) with the host's root filesystem shared
# read-only over virtio-9p, and run the rdma tests inside it on Soft-RoCE
# (rdma_rxe). The VM's TAP output and exit status come back here.
#   tests/vm/run-vm.sh            (as root; needs linux-image-amd64, qemu-system-x86, busybox-static, cpio)
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${top_builddir:=$(cd "$here/../.." && pwd)}"
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
VM_TIMEOUT=${VM_TIMEOUT:-1800}
VM_MEM=${VM_MEM:-3072}

bail() { echo "Bail out! $*"; exit 1; }

# The kernel must match modules on this root, which the VM loads from it.
KVER=${KVER:-}
if [ -z "$KVER" ]; then
	for k in $(ls /lib/modules 2>/dev/null | sort -V -r); do
		[ -r "/boot/vmlinuz-$k" ] && { KVER=$k; break; }
	done
fi
[ -n "$KVER" ] && [ -r "/boot/vmlinuz-$KVER" ] || bail "no /boot/vmlinuz-* with modules in /lib/modules (install linux-image-amd64)"
command -v qemu-system-x86_64 > /dev/null || bail "qemu-system-x86_64 missing (install qemu-system-x86)"
BUSYBOX=$(command -v busybox || echo /bin/busybox)
file -L "$BUSYBOX" 2>/dev/null | grep -q "statically linked" || [ -x /bin/busybox ] || bail "busybox missing (install busybox-static)"
command -v cpio > /dev/null || bail "cpio missing"

W=$(mktemp -d "${TMPDIR:-/tmp}/rdmapool-vm.XXXXXX")
trap 'rm -rf "$W"' EXIT
R="$W/initrd"
mkdir -p "$R/bin" "$R/proc" "$R/sys" "$R/dev" "$R/newroot" "$R/modules"
cp "$BUSYBOX" "$R/bin/busybox"
for a in sh mount umount insmod switch_root mkdir cat echo sleep; do ln -s busybox "$R/bin/$a"; done

# Modules for virtio-pci and 9p, with their dependencies in load order.
MODDIR=/lib/modules/$KVER
declare -A seen
order=()
add_mod() {
	local name=$1 line path dep
	line=$(grep -E "(^|/)$name\.ko(\.[a-z]+)?:" "$MODDIR/modules.dep" | head -n 1)
	[ -n "$line" ] || return 0 # built in
	path=${line%%:*}
	[ -n "${seen[$path]+x}" ] && return 0
	seen[$path]=1
	for dep in ${line#*:}; do
		dep=$(basename "$dep"); add_mod "${dep%%.ko*}"
	done
	order+=("$path")
}
for m in virtio_pci 9pnet_virtio 9p; do add_mod "$m"; done
: > "$R/modules.order"
for p in "${order[@]}"; do
	b=$(basename "$p")
	case "$p" in
	*.ko.xz) xz -dc "$MODDIR/$p" > "$R/modules/${b%.xz}"; b=${b%.xz} ;;
	*.ko.zst) zstd -qdc "$MODDIR/$p" > "$R/modules/${b%.zst}"; b=${b%.zst} ;;
	*) cp "$MODDIR/$p" "$R/modules/$b" ;;
	esac
	echo "$b" >> "$R/modules.order"
done

cat > "$R/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in $(cat /modules.order); do insmod "/modules/$m" || echo "rdmapool-vm: insmod $m failed"; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=262144 hostroot /newroot ||
	{ echo "rdmapool-vm: cannot mount the host root"; echo "RP-VM-STATUS: 99"; echo o > /proc/sysrq-trigger; }
umount /proc /sys
exec switch_root /newroot /bin/bash "$rp_stage2"
INIT
chmod +x "$R/init"
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1) > "$W/initrd.gz" || bail "cannot build the initramfs"

echo "# booting $KVER under qemu (TCG), ${VM_MEM} MiB, timeout ${VM_TIMEOUT}s"
start=$(date +%s)
timeout -k 10 "$VM_TIMEOUT" qemu-system-x86_64 -accel tcg -nographic -no-reboot -m "$VM_MEM" -smp 2 \
	-kernel "/boot/vmlinuz-$KVER" -initrd "$W/initrd.gz" \
	-append "console=ttyS0 quiet loglevel=3 panic=-1 rp_stage2=$here/stage2.sh rp_builddir=$top_builddir rp_srcdir=$top_srcdir rp_tests=${VM_TESTS:-all} rp_nemesis_seed=${NEMESIS_SEED:-} rp_nemesis_secs=${VM_NEMESIS_SECONDS:-30}" \
	-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
	-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
	-nic none -serial mon:stdio -display none < /dev/null 2>&1 | stdbuf -oL tr -d '\r' > "$W/console.log"
qrc=${PIPESTATUS[0]}
echo "# VM finished in $(( $(date +%s) - start ))s (qemu exit $qrc)"
# TAP lines from the VM go out as they are; everything else as comments.
grep -E '^(ok|not ok|1\.\.|Bail out!)' "$W/console.log"
grep -vE '^(ok|not ok|1\.\.|Bail out!|RP-VM-STATUS)| info: ' "$W/console.log" | tail -n "${VM_LOG_LINES:-80}" | sed 's/^/# vm: /'
status=$(sed -n 's/^RP-VM-STATUS: \([0-9]*\).*/\1/p' "$W/console.log" | tail -n 1)
if [ -z "$status" ]; then
	[ "$qrc" = 124 ] && echo "Bail out! the VM did not finish within ${VM_TIMEOUT}s" || echo "Bail out! the VM stopped without reporting a result"
	exit 1
fi
exit "$status"
