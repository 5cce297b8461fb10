# Ports for test pool servers, shared by the integration tests and the
# fstests. Tests run in parallel (make -j2 check), and a port that is free
# when one test picks it may be taken by another test before its server
# binds it: a port is reserved by a symlink in a shared folder (ln -s is
# atomic) naming the test's scratch folder, dropped when that folder is
# gone. Ports stay below the kernel's ephemeral range, so no client socket
# can hold one.
RP_PORT_DIR="${TMPDIR:-/tmp}/rdmapool-test-ports"

_rp_port_free() {
	if command -v ss > /dev/null 2>&1; then
		[ -z "$(ss -Htan "sport = :$1" 2>/dev/null)" ]
	else
		! (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null
	fi
}

# rp_reserve_port OWNER_DIR: print a free port reserved for OWNER_DIR.
rp_reserve_port() {
	local owner=$1 p lo
	lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
	mkdir -p "$RP_PORT_DIR" 2>/dev/null
	while :; do
		p=$((10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000)))
		if ! ln -s "$owner" "$RP_PORT_DIR/$p" 2>/dev/null; then
			# held by a test whose folder is gone: take it over
			[ -e "$RP_PORT_DIR/$p" ] && continue
			rm -f "$RP_PORT_DIR/$p"
			ln -s "$owner" "$RP_PORT_DIR/$p" 2>/dev/null || continue
		fi
		_rp_port_free "$p" && { echo "$p"; return; }
		rm -f "$RP_PORT_DIR/$p"
	done
}

# rp_release_ports OWNER_DIR: drop every reservation of OWNER_DIR.
rp_release_ports() {
	find "$RP_PORT_DIR" -maxdepth 1 -lname "$1" -delete 2>/dev/null
	return 0
}
