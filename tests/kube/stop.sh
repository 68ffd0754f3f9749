#!/bin/sh
# Stop the servers tests/kube/start.sh DIR started and remove DIR.
dir=${1:?usage: stop.sh DIR}
for p in apiserver etcd; do
    if [ -f "$dir/$p.pid" ]; then
        pid=$(cat "$dir/$p.pid")
        kill "$pid" 2>/dev/null
        i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        kill -9 "$pid" 2>/dev/null
    fi
done
rm -rf "$dir"
