# SPDX-License-Identifier: MIT
# SPDX-FileCopyrightText: 2026 The npushm authors
# topology.sh - sourced by the RDMA tests and benchmark inside the test VM
# (root): NHOSTS "hosts", each a network namespace with a veth into a TCP
# bridge (198.18.0.H/24, bootstrap and control channels) and a soft-RoCE
# device on a veth into an RDMA bridge (198.19.0.H/24).
#
# Soft-RoCE on Linux 6.1 lives in the initial network namespace: rdma_rxe
# opens its UDP socket (port 4791) and routes its packets there
# (drivers/infiniband/sw/rxe/rxe_net.c: rxe_setup_udp_tunnel(&init_net, ..),
# ip_route_output_key(&init_net, ..)), so an rxe device on a veth moved into a
# namespace never receives. The RDMA veths therefore stay in the initial
# namespace; RDMA devices are shared by all namespaces (rdma system: netns
# shared), so each host's ranks use their host's device (NPCCL_IB_DEV). The
# addresses of all devices are then local to one routing table: policy rules
# send a device's traffic out of its own veth (table 100+H for source
# 198.19.0.H, before the local table) and accept_local lets the receiving
# veth take packets from a local source, so every RDMA packet crosses
# veth -> bridge -> veth as between two machines. Since every address is
# local, only the veth that owns an address may answer ARP for it
# (arp_ignore=1, arp_announce=2), and a device's traffic to itself stays on
# the loopback (a rule before the per-device ones).
#
#   topo_up NHOSTS      create; sets TOPO_NS_<H> and TOPO_DEV_<H>
#   topo_down           remove everything (also on a partial setup)
#   topo_exec H CMD...  run CMD in host H's namespace with NPCCL_IB_DEV set
#
# Names carry the prefix $TOPO_P (default rt<pid>) so runs do not collide.

TOPO_P=${TOPO_P:-rt$$}
TOPO_N=0

# Processes holding an RDMA device open (a killed test's leftovers): an rxe
# device cannot be deleted while they live (the kernel waits for them). One
# find over /proc, not a command per process: under emulation that is the
# difference between a fraction of a second and minutes.
topo_uverbs_users() {
	find /proc/[0-9]*/fd -maxdepth 1 -lname '/dev/infiniband/uverbs*' 2>/dev/null |
		cut -d/ -f3 | sort -u | grep -vx "$$"
}
topo_kill_users() {
	topo_uverbs_users | xargs -r kill -9 2>/dev/null
	_ti=0
	while [ -n "$(topo_uverbs_users)" ] && [ $_ti -lt 50 ]; do
		_ti=$((_ti + 1))
		sleep 0.1
	done
}

topo_down() {
	for _th in $(seq 1 "$TOPO_N"); do
		ip netns pids "${TOPO_P}h$_th" 2>/dev/null | xargs -r kill -9 2>/dev/null
	done
	topo_kill_users
	for _th in $(seq 1 "$TOPO_N"); do
		rdma link delete "${TOPO_P}rxe$_th" 2>/dev/null
		ip link del "${TOPO_P}r$_th" 2>/dev/null
		ip rule del pref 10 iif lo from "198.19.0.$_th" lookup $((100 + _th)) 2>/dev/null
		ip rule del pref 5 from "198.19.0.$_th" to "198.19.0.$_th" lookup local 2>/dev/null
		ip route flush table $((100 + _th)) 2>/dev/null
		ip netns del "${TOPO_P}h$_th" 2>/dev/null
	done
	ip link del "${TOPO_P}rbr" 2>/dev/null
	ip link del "${TOPO_P}tbr" 2>/dev/null
	if ip rule show | grep -q "^100:.*lookup local"; then
		ip rule add pref 0 lookup local 2>/dev/null && ip rule del pref 100 lookup local
	fi
	TOPO_N=0
}

topo_up() {
	_tn=$1
	modprobe rdma_rxe 2>/dev/null && modprobe ib_uverbs 2>/dev/null || {
		echo "topology: cannot load rdma_rxe/ib_uverbs" >&2; return 1; }
	ip link add "${TOPO_P}rbr" mtu 9000 type bridge && ip link set "${TOPO_P}rbr" up || return 1
	ip link add "${TOPO_P}tbr" type bridge && ip link set "${TOPO_P}tbr" up || return 1
	sysctl -qw net.ipv4.conf.all.accept_local=1 net.ipv4.conf.all.rp_filter=0 \
		net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 \
		net.core.netdev_max_backlog=10000
	# the local table after the per-device rules
	if ! ip rule show | grep -q "^100:.*lookup local"; then
		ip rule add pref 100 lookup local && ip rule del pref 0 lookup local || return 1
	fi
	for _th in $(seq 1 "$_tn"); do
		TOPO_N=$_th
		# RDMA side, initial namespace
		# 9000-byte frames: 4096-byte RDMA MTU, a quarter of the packets
		ip link add "${TOPO_P}r$_th" mtu 9000 type veth peer name "${TOPO_P}R$_th" mtu 9000 || return 1
		ip link set "${TOPO_P}R$_th" master "${TOPO_P}rbr" up
		ip addr add "198.19.0.$_th/24" dev "${TOPO_P}r$_th"
		sysctl -qw "net.ipv4.conf.${TOPO_P}r$_th.accept_local=1" "net.ipv4.conf.${TOPO_P}r$_th.rp_filter=0" \
			"net.ipv4.conf.${TOPO_P}r$_th.arp_ignore=1" "net.ipv4.conf.${TOPO_P}r$_th.arp_announce=2"
		ip link set "${TOPO_P}r$_th" up
		ip rule add pref 5 from "198.19.0.$_th" to "198.19.0.$_th" lookup local
		ip rule add pref 10 iif lo from "198.19.0.$_th" lookup $((100 + _th))
		ip route add 198.19.0.0/24 dev "${TOPO_P}r$_th" src "198.19.0.$_th" table $((100 + _th))
		rdma link add "${TOPO_P}rxe$_th" type rxe netdev "${TOPO_P}r$_th" || return 1
		# TCP side, the host's namespace
		ip netns add "${TOPO_P}h$_th" || return 1
		ip link add "${TOPO_P}t$_th" type veth peer name "${TOPO_P}T$_th" || return 1
		ip link set "${TOPO_P}t$_th" netns "${TOPO_P}h$_th"
		ip link set "${TOPO_P}T$_th" master "${TOPO_P}tbr" up
		ip -n "${TOPO_P}h$_th" link set lo up
		ip -n "${TOPO_P}h$_th" addr add "198.18.0.$_th/24" dev "${TOPO_P}t$_th"
		ip -n "${TOPO_P}h$_th" link set "${TOPO_P}t$_th" up
		eval "TOPO_NS_$_th=${TOPO_P}h$_th TOPO_DEV_$_th=${TOPO_P}rxe$_th"
	done
	# wait for the devices' ports and the veths
	for _th in $(seq 1 "$_tn"); do
		_ti=0
		until [ "$(cat "/sys/class/infiniband/${TOPO_P}rxe$_th/ports/1/state" 2>/dev/null | cut -c1)" = 4 ] &&
		      ip -n "${TOPO_P}h$_th" link show "${TOPO_P}t$_th" | grep -q "state UP"; do
			_ti=$((_ti + 1))
			[ $_ti -gt 50 ] && { echo "topology: host $_th did not come up" >&2; return 1; }
			sleep 0.2
		done
	done
	return 0
}

topo_exec() {
	_th=$1
	shift
	NPCCL_IB_DEV=${TOPO_P}rxe$_th ip netns exec "${TOPO_P}h$_th" "$@"
}
