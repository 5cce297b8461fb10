#!/bin/bash
# Inside the VM, as process 1: writable tmpfs where needed, Soft-RoCE on a
# veth pair, then the rdma tests. Reports RP-VM-STATUS and powers off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
finish() {
	mount -t proc proc /proc 2> /dev/null
	echo "RP-VM-STATUS: $1"
	sync
	echo 1 > /proc/sys/kernel/sysrq
	echo o > /proc/sysrq-trigger
	sleep 10
}
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2> /dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
# what udev would make: bash process substitution needs /dev/fd
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
# Writable tmpfs where tools expect it, except over the trees being tested
# (a CI clone may well live under /tmp).
covers() { case "$rp_srcdir/" in "$1"/*) return 0 ;; esac; case "$rp_builddir/" in "$1"/*) return 0 ;; esac; return 1; }
for d in /dev/shm /run /tmp /var/tmp /var/lib /mnt /root /var/log; do
	covers "$d" && { echo "# $d holds the tested tree: left read-only"; continue; }
	mount -t tmpfs tmpfs "$d"
done
mkdir -p /run/rp-tmp
export TMPDIR=/run/rp-tmp
mount -t configfs configfs /sys/kernel/config 2> /dev/null
echo "# vm up: $(uname -r), $(nproc) cpus"
for m in fuse veth rdma_rxe ib_uverbs rdma_ucm; do
	modprobe "$m" || { echo "Bail out! modprobe $m failed"; finish 1; }
done
ip link set lo up
ip link add veth0 type veth peer name veth1 &&
ip addr add 10.0.0.1/24 dev veth0 && ip addr add 10.0.0.2/24 dev veth1 &&
ip link set veth0 up && ip link set veth1 up &&
rdma link add rxe0 type rxe netdev veth0 &&
rdma link add rxe1 type rxe netdev veth1 || { echo "Bail out! cannot set up Soft-RoCE"; finish 1; }
sleep 1
rdma link show | sed 's/^/# /'
export top_builddir=$rp_builddir top_srcdir=$rp_srcdir
rc=0
if [ "$rp_tests" != bench ]; then
	bash "$rp_srcdir/tests/vm/rdma-tests.sh" "$rp_tests"
	rc=$?
fi
# the rdma half of the benchmark (VM_TESTS=bench: only that): printed, never judged
case $rp_tests in all|bench) bash "$rp_srcdir/tests/vm/rdma-bench.sh" ;; esac
finish $rc
