# Functions of scripts/with-node.sh (sourced): the packages a node needs, its
# configuration files, the sandbox image, and what a node changes on the host
# (recorded before it starts, put back after it stops).
# shellcheck shell=bash

# The pods' sandbox image: the static pause program of scripts/kube/pause.
SANDBOX_IMAGE=localhost/sluice-pause:1

need_node_packages() {
  local missing=() pair
  for pair in runc:runc iptables:iptables conntrack:conntrack ip:iproute2 findmnt:util-linux; do
    command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
  done
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || {
    echo "with-node: needs ${missing[*]} (no apt-get here to install them)" >&2
    exit 1
  }
  echo "with-node: installing ${missing[*]}" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# What a kubelet, kube-proxy and the CNI plugins may change on the host.
NODE_SYSCTLS=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys
  kernel.keys.root_maxbytes net.ipv4.ip_forward net.ipv4.conf.all.route_localnet
  net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables net.netfilter.nf_conntrack_max
  net.netfilter.nf_conntrack_tcp_timeout_established net.netfilter.nf_conntrack_tcp_timeout_close_wait)
NODE_TABLES=(filter nat mangle raw)

# host_snapshot FILE: the parts of the host's state a node touches, one line each.
host_snapshot() {
  local v t key
  {
    for v in iptables ip6tables; do
      for t in "${NODE_TABLES[@]}"; do
        "$v" -w -t "$t" -S 2>/dev/null | sed "s/^/$v $t /" || true
      done
    done
    for key in "${NODE_SYSCTLS[@]}"; do
      echo "sysctl $key=$(sysctl -n "$key" 2>/dev/null || echo absent)"
    done
    find /sys/fs/cgroup -mindepth 1 -maxdepth 3 -type d -name 'kubepods*' 2>/dev/null | sed 's/^/cgroup /' | sort
    findmnt -rn -o TARGET | grep -E 'sluice-node\.|kubelet|/run/netns/cni-|io\.containerd' | sed 's/^/mount /' | sort || true
    ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | grep -E '^sluice-br0' | sed 's/^/link /' || true
    [ -e /var/log/containers ] && echo "dir /var/log/containers"
    [ -e /var/log/pods ] && echo "dir /var/log/pods"
    find /var/lib/cni/results -name 'sluice-node-*' 2>/dev/null | sed 's/^/file /' | sort
    pgrep -a -f '/kube/k8s-[^ ]*/(kubelet|kube-scheduler|kube-controller-manager|kube-proxy|containerd-[0-9.]*/)' |
      cut -d' ' -f2- | sed 's/^/process /' | sort || true
  } >"$1"
}

# host_restore BEFORE: undoes, against the snapshot BEFORE, what host_snapshot
# would show as new: iptables rules (in chains that were there) and chains,
# sysctls, kubepods cgroups, log directories, CNI result files.
host_restore() {
  local before=$1 now v t line chain key value
  now=$(mktemp)
  host_snapshot "$now"
  for v in iptables ip6tables; do
    for t in "${NODE_TABLES[@]}"; do
      local new_chains=()
      while IFS= read -r line; do
        case $line in
          "-N "*) new_chains+=("${line#-N }") ;;
        esac
      done < <(grep -F -x -v -f <(grep "^$v $t " "$before" | cut -d' ' -f3-) <(grep "^$v $t " "$now" | cut -d' ' -f3-) || true)
      while IFS= read -r line; do
        [[ $line == "-A "* ]] || continue
        chain=${line#-A }
        chain=${chain%% *}
        # Rules of a new chain go with it below.
        [[ " ${new_chains[*]} " == *" $chain "* ]] && continue
        eval "$v -w -t $t -D ${line#-A }" 2>/dev/null || true
      done < <(grep -F -x -v -f <(grep "^$v $t " "$before" | cut -d' ' -f3-) <(grep "^$v $t " "$now" | cut -d' ' -f3-) || true)
      for chain in "${new_chains[@]}"; do "$v" -w -t "$t" -F "$chain" 2>/dev/null || true; done
      for chain in "${new_chains[@]}"; do "$v" -w -t "$t" -X "$chain" 2>/dev/null || true; done
    done
  done
  for key in "${NODE_SYSCTLS[@]}"; do
    value=$(sed -n "s/^sysctl $key=//p" "$before")
    [ -n "$value" ] && [ "$value" != absent ] && sysctl -q -w "$key=$value" >/dev/null 2>&1 || true
  done
  find /sys/fs/cgroup -mindepth 2 -maxdepth 2 -type d -name 'kubepods*' 2>/dev/null | while IFS= read -r line; do
    find "$line" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
  for line in /var/log/containers /var/log/pods; do
    grep -qx "dir $line" "$before" || rm -rf "$line"
  done
  find /var/lib/cni/results -name 'sluice-node-*' -delete 2>/dev/null || true
  rm -f "$now"
}

# oci_archive_of_binary BINARY PATH NAME OUT: an OCI image archive (the layout
# `ctr images import` reads) of one static binary at PATH, its entrypoint.
oci_archive_of_binary() {
  local binary=$1 path=$2 name=$3 out=$4 work
  work=$(mktemp -d)
  mkdir -p "$work/rootfs$(dirname "$path")" "$work/layout/blobs/sha256"
  cp "$binary" "$work/rootfs$path"
  chmod 755 "$work/rootfs$path"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$work/rootfs" -cf "$work/layer.tar" .
  local layer layer_size config config_size manifest manifest_size
  layer=$(sha256sum "$work/layer.tar" | cut -d' ' -f1)
  layer_size=$(stat -c %s "$work/layer.tar")
  mv "$work/layer.tar" "$work/layout/blobs/sha256/$layer"
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":["%s"],"User":"65535:65535"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$path" "$layer" >"$work/config.json"
  config=$(sha256sum "$work/config.json" | cut -d' ' -f1)
  config_size=$(stat -c %s "$work/config.json")
  mv "$work/config.json" "$work/layout/blobs/sha256/$config"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$config" "$config_size" "$layer" "$layer_size" >"$work/manifest.json"
  manifest=$(sha256sum "$work/manifest.json" | cut -d' ' -f1)
  manifest_size=$(stat -c %s "$work/manifest.json")
  mv "$work/manifest.json" "$work/layout/blobs/sha256/$manifest"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$manifest" "$manifest_size" "$name" "${name##*:}" >"$work/layout/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' >"$work/layout/oci-layout"
  tar --owner=0 --group=0 --numeric-owner -C "$work/layout" -cf "$out" .
  rm -rf "$work"
}

# write_node_configs: containerd's, the kubelet's, kube-proxy's and the CNI
# network's configuration under $dir.
write_node_configs() {
  mkdir -p "$dir/cni/net.d" "$dir/cni/ipam" "$dir/pods"
  # containerd 2 (configuration version 3). restrict_oom_score_adj: root here
  # lacks CAP_SYS_RESOURCE, and without it every sandbox fails ("can't get
  # final child's PID from pipe: EOF"). Network namespaces under the state
  # directory, so that they go with it.
  cat >"$dir/containerd.toml" <<EOF
version = 3
root = "$dir/containerd/root"
state = "$dir/containerd/state"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$SANDBOX_IMAGE"
[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$dir/cni/net.d"
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = "$(command -v runc)"
      SystemdCgroup = false
[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
EOF
  # The pod network: the node's bridge (made beforehand), addresses from the
  # rest of its /24, no masquerading (pods reach only the node and each other).
  cat >"$dir/cni/net.d/10-sluice-node.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "sluice-node",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$bridge",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{ "subnet": "$pod_cidr", "gateway": "$node_ip" }]],
        "routes": [{ "dst": "0.0.0.0/0" }],
        "dataDir": "$dir/cni/ipam"
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
EOF
  # cgroup v1 here (failCgroupV1: false; docs/testing-kubernetes.md says what
  # a v2-only machine changes), cgroupfs like containerd's runc options.
  # Evictions only when the machine is truly out of room: a busy development
  # machine must not evict the suite's pods.
  cat >"$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $node_ip
port: $kubelet_port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $kubelet_healthz
authentication:
  anonymous: { enabled: true }
  webhook: { enabled: false }
authorization: { mode: AlwaysAllow }
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$sock
podLogsDir: $dir/pods
resolvConf: /etc/resolv.conf
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
maxPods: 60
EOF
  cat >"$dir/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $kubeconfig
mode: iptables
hostnameOverride: $node_name
bindAddress: $node_ip
healthzBindAddress: 127.0.0.1:$proxy_healthz
metricsBindAddress: 127.0.0.1:$proxy_metrics
clusterCIDR: $pod_cidr
nodePortAddresses: ["$node_ip/32"]
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
}

# node_teardown: stops the node's processes and every pod (through the CRI,
# so each sandbox's network is taken down by its CNI plugins), then unmounts
# what is left under $dir.
node_teardown() {
  local entry name pid
  stop_named() {
    for entry in "${pids[@]}"; do
      name=${entry%%:*}
      pid=${entry#*:}
      [ "$name" = "$1" ] || continue
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      kill -KILL "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    done
  }
  stop_named kube-controller-manager
  stop_named kube-scheduler
  stop_named kubelet
  if [ -S "$sock" ]; then
    local crictl=("$bin_dir/crictl" --runtime-endpoint "unix://$sock" --timeout 30s)
    "${crictl[@]}" pods -q 2>/dev/null | xargs -r "${crictl[@]}" stopp >/dev/null 2>&1 || true
    "${crictl[@]}" rmp -a -f >/dev/null 2>&1 || true
  fi
  stop_named kube-proxy
  stop_named containerd
  # Shims of tasks containerd could not stop, and whatever still runs in a pod's cgroup.
  pkill -KILL -f "containerd-shim-runc-v2 .*-address $sock" 2>/dev/null || true
  find /sys/fs/cgroup/pids -path '*kubepods*' -name cgroup.procs 2>/dev/null |
    xargs -r cat 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
  findmnt -rn -o TARGET | grep -F "$dir" | sort -r | while IFS= read -r mnt; do
    umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true
  done
}
