#!/bin/bash
# Every program refuses a bad cluster file with FILE:LINE:COL and says why.
. "$(dirname "$0")/lib.sh"

make_cluster 1
check_fails "missing cluster file named" "$T/nope.json:0:0: cannot open cluster file" \
	"$RDMAPOOL" status -c "$T/nope.json"
printf '{\n  "version": 1,\n  "name": "x",\n  oops\n}\n' > "$T/syntax.json"
check_fails "syntax error with line and column" "$T/syntax.json:4:[0-9]+: string or .}. expected near .oops." \
	"$RDMAPOOL" status -c "$T/syntax.json"
sed 's/"block_size"/"blocksize"/' "$CLUSTER" > "$T/unknown.json"
check_fails "unknown key with line and column" "$T/unknown.json:6:3: unknown key \"blocksize\"" \
	"$RDMAPOOL" status -c "$T/unknown.json"
sed 's/"port": [0-9]*/"port": 99999/' "$CLUSTER" > "$T/port.json"
check_fails "port out of range" "$T/port.json:8:[0-9]+: \"port\" is 99999, expected 1..65535" \
	"$RDMAPOOLD" -c "$T/port.json" --id 0 --size 8M --foreground
check_fails "rdmapoold: unknown peer id" "no peer with id 5" \
	"$RDMAPOOLD" -c "$CLUSTER" --id 5 --size 8M --foreground
mv "$T/secret" "$T/secret.away"
check_fails "missing secret file named" "secret: cannot open secret_file" \
	"$RDMAPOOL" status -c "$CLUSTER"
mv "$T/secret.away" "$T/secret"
chmod 644 "$T/secret"
check_fails "secret readable by other users refused" "secret: secret_file is readable by other users \\(mode 0644\\): chmod 600 it" \
	"$RDMAPOOL" status -c "$CLUSTER"
check_fails "rdmapoold: secret readable by other users refused" "chmod 600 it" \
	"$RDMAPOOLD" -c "$CLUSTER" --id 0 --size 8M --foreground
chmod 600 "$T/secret"
cp "$T/secret" "$T/secret.good"
head -c 300 /dev/zero | tr '\0' s > "$T/secret"
check_fails "secret over 256 bytes refused, not cut" "secret is over 256 bytes" \
	"$RDMAPOOL" status -c "$CLUSTER"
cp "$T/secret.good" "$T/secret"
check_fails "rdmapoold: bad size" "--size 12Q" "$RDMAPOOLD" -c "$CLUSTER" --id 0 --size 12Q
check_fails "rdmapoold: size larger than memory refused, not OOM-killed" "region does not fit in memory: [0-9]+ MiB available" \
	"$RDMAPOOLD" -c "$CLUSTER" --id 0 --size 64T --foreground
check_fails "rdmapoold: size too small for the layout" "too small" \
	"$RDMAPOOLD" -c "$CLUSTER" --id 0 --size 64K --foreground
done_testing
