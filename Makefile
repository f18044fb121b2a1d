# rdma-rs: the Linux RDMA stack in Rust, as out-of-tree Rust-for-Linux modules.
#
#   make check   every test: formatting, host tests, module build, the VM
#   make demo    the stack in a VM on a simulated ConnectX
#   make         the modules (against the cached test kernel, or KDIR=...)
#   make setup   host packages, Rust pieces, kernel source (check/demo do it)
#   make kernel  the cached test kernel
#   make vm      an interactive shell in the test VM
#   make peer    the upstream C stack (rdma_rxe) in the VM
#   make soak    the verbs workload N times (N=1000 STACK=peer|ours JOBS=2)
#   make bench   the core's data-path dispatch cost next to a direct call
#   make bench-uverbs  uverbs round trips (QUERY_PORT, PD alloc+dealloc), ours vs upstream
#   make bench-traffic ib_send_lat and ib_write_bw through libmlx5 (ours) vs rdma_rxe
#   make bench-unplug  hot-unplug removal time under 100 processes (with and without traffic)
#   make traffic       the data-path suites alone (pingpong, perftest, traffic test)
#   make fuzz N=... SEED=...  the uverbs fuzzer: ours (mock, both mlx5 functions) and
#                      upstream rxe with the same seed, compared; removal raced (VERBOSE=1: every call)
#   make faults        every verb under allocation and firmware fault injection, point by point
#   make pcifn   upstream mlx5_core on the emulated ConnectX PCI function (vfio-user)
#   make pcifn-compare  the same function under upstream C mlx5_ib (a second boot, mode
#                pcifn_c) and under ours (make pcifn), dumps diffed against the known differences
#   make qemu-vfio-user  trixie's QEMU 11.1 with the vfio-user client, cached (Documentation/pcifn.md)
#   make install the modules into /lib/modules/<release>/updates/rdma-rs of the running kernel
#                (or KDIR=...), depmod, /etc/modprobe.d/rdma-rs.conf (README, "On a real host")
#
# KDIR=<kernel build tree> builds the modules for your own kernel (it must
# be a full build tree of a CONFIG_RUST kernel: out-of-tree Rust modules
# need its rust/*.rmeta).

SHELL := /bin/bash
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
LLVM ?= -19

# The cached test kernel, built on demand unless KDIR is given.
ifeq ($(KDIR),)
KDIR_CMD = $$($(TOP)/tools/kernel.sh)
else
KDIR_CMD = $(KDIR)
endif

# The benchmark kernel (kernel/bench.config: the test kernel's options with the
# debug options off), built on demand by the bench* targets only, cached like
# the test kernel. BENCH_KERNEL=test measures on the test kernel instead; KDIR=
# on that tree. The modules for it are built into out/modules-<kernel build>.
BENCH_KERNEL ?= bench
ifneq ($(KDIR),)
BENCH_KDIR_CMD = $(KDIR)
else ifeq ($(BENCH_KERNEL),test)
BENCH_KDIR_CMD = $$($(TOP)/tools/kernel.sh)
else
BENCH_KDIR_CMD = $$($(TOP)/tools/kernel.sh $(TOP)/kernel/bench.config)
endif
# bench_vm MODE LOG: the modules built against the bench kernel, then MODE booted on it.
# Kbuild refuses a separate output directory (MO=) for a source tree that holds
# the test kernel's build, so the tracked sources (with their working-tree
# changes) are copied to out/src-<kernel build> and built there.
define bench_vm
kb=$(BENCH_KDIR_CMD) && mo=$(TOP)/out/src-$$(basename "$$kb") && rm -rf "$$mo" && mkdir -p "$$mo" && \
	git -C $(TOP) ls-files -z | (cd $(TOP) && tar --null -T - -cf -) | tar -C "$$mo" -xf - && \
	$(MAKE) -s -C "$$kb" LLVM=$(LLVM) M="$$mo" modules && \
	RDMARS_MODDIR="$$mo" RDMARS_VM_TIMEOUT=$${RDMARS_VM_TIMEOUT:-3600} $(TOP)/tools/vm.sh $(1) "$$kb" $(2)
endef

.PHONY: all modules setup kernel check demo vm peer soak bench bench-uverbs bench-traffic bench-unplug traffic breadth fuzz faults qemu-vfio-user pcifn pcifn-compare install clean

all: modules

setup:
	@$(TOP)/tools/setup.sh

kernel: setup
	@$(TOP)/tools/kernel.sh

modules:
	@[ -n "$(KDIR)" ] || $(TOP)/tools/setup.sh
	@kb=$(KDIR_CMD) && \
	$(MAKE) -C "$$kb" LLVM=$(LLVM) M=$(TOP) modules

check:
	@$(TOP)/tools/check.sh

qemu-vfio-user:
	@$(TOP)/tools/qemu-vfio-user.sh

pcifn: modules
	@kb=$(KDIR_CMD) && $(TOP)/tools/pcifn.sh "$$kb" $(TOP)/out/logs/pcifn.log && \
	grep -E 'pcifn:|mlx5_core|RDMARS-VM|^(not )?ok' $(TOP)/out/logs/pcifn.log; \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode pcifn out/logs/pcifn.log

# Both boots, one after the other (tools/pcifn.sh takes the VM lock), then the host-side diff:
# mode pcifn with the comparison dump (rdmars.pcifn_cmp=1), then mode pcifn_c.
pcifn-compare: modules
	@kb=$(KDIR_CMD) && RDMARS_VM_ARGS=rdmars.pcifn_cmp=1 $(TOP)/tools/pcifn.sh "$$kb" $(TOP)/out/logs/pcifn.log && \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode pcifn out/logs/pcifn.log; \
	kb=$(KDIR_CMD) && $(TOP)/tools/pcifn.sh "$$kb" $(TOP)/out/logs/pcifn_c.log ib pcifn_c && \
	grep -E 'pcifn:|RDMARS-VM|^(not )?ok' $(TOP)/out/logs/pcifn_c.log; \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode pcifn_c out/logs/pcifn_c.log; \
	$(TOP)/tools/pcifn-compare.sh $(TOP)/out/logs/pcifn.log $(TOP)/out/logs/pcifn_c.log

# make install [KDIR=<build tree>] [INSTALL_MOD_PATH=<staging root>]: for a real host with a
# CONFIG_RUST kernel (default: the running kernel's /lib/modules/<release>/build). The test
# modules (ib_core_rs_test, ib_core_rs_mockdev, rdma_rs_mock) are installed too; they have no
# device alias and never load by themselves.
INSTALL_KDIR = $(or $(KDIR),/lib/modules/$(shell uname -r)/build)
install:
	@$(MAKE) -C "$(INSTALL_KDIR)" LLVM=$(LLVM) M=$(TOP) modules && \
	$(MAKE) -C "$(INSTALL_KDIR)" LLVM=$(LLVM) M=$(TOP) INSTALL_MOD_DIR=updates/rdma-rs modules_install && \
	install -D -m 0644 $(TOP)/dist/rdma-rs-modprobe.conf $(INSTALL_MOD_PATH)/etc/modprobe.d/rdma-rs.conf

demo:
	@$(TOP)/tools/demo.sh

vm: modules
	@$(TOP)/tools/vm.sh shell "$(KDIR_CMD)" $(TOP)/out/logs/shell.log

peer: modules
	@kb=$(KDIR_CMD) && $(TOP)/tools/vm.sh peer "$$kb" $(TOP)/out/logs/peer.log && \
	cat $(TOP)/out/logs/peer.log

# make soak N=1000 STACK=peer|ours [JOBS=2]: the workload N times in JOBS
# parallel lanes; nothing may grow.
N ?= 100
STACK ?= peer
JOBS ?= 2
soak: modules
	@kb=$(KDIR_CMD) && RDMARS_VM_TIMEOUT=$${RDMARS_VM_TIMEOUT:-7200} \
	RDMARS_VM_ARGS="rdmars.n=$(N) rdmars.stack=$(STACK) rdmars.jobs=$(JOBS)" \
	$(TOP)/tools/vm.sh soak "$$kb" $(TOP)/out/logs/soak.log && \
	grep -E '^soak:|ok [0-9]|FAIL' $(TOP)/out/logs/soak.log; \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode soak out/logs/soak.log

# make bench N=1000000: the core's data-path dispatch cost (ns/call) next
# to a direct call of the same driver op.
bench: setup
	@export RDMARS_VM_ARGS="rdmars.n=$(or $(N_BENCH),1000000) rdmars.runs=$(or $(RUNS),3) $(BENCH_ARGS)" && \
	$(call bench_vm,bench,$(TOP)/out/logs/bench.log) && \
	sed -n '/^=* rdma-rs benchmark/,/^=====/p' $(TOP)/out/logs/bench.log

# make bench-uverbs N_BENCH=5000: ns per QUERY_PORT and PD alloc+dealloc
# pairs/s through libibverbs, ours (rxe_mock0) next to upstream (rdma_rxe).
bench-uverbs: setup
	@export RDMARS_VM_ARGS="rdmars.n=$(or $(N_BENCH),5000) rdmars.runs=$(or $(RUNS),3) $(BENCH_ARGS)" && \
	$(call bench_vm,bench_uverbs,$(TOP)/out/logs/bench-uverbs.log) && \
	sed -n '/^=* rdma-rs uverbs benchmark/,/^=====/p' $(TOP)/out/logs/bench-uverbs.log

# make bench-traffic N_BENCH=2000: perftest latency and message rate, ours
# (libmlx5 on the simulator) next to upstream (rdma_rxe), and the device
# worker's idle CPU time.
bench-traffic: setup
	@export RDMARS_VM_ARGS="rdmars.n=$(or $(N_BENCH),2000) rdmars.runs=$(or $(RUNS),3) $(BENCH_ARGS)" && \
	$(call bench_vm,bench_traffic,$(TOP)/out/logs/bench-traffic.log) && \
	sed -n '/^=* rdma-rs traffic benchmark/,/^=====/p' $(TOP)/out/logs/bench-traffic.log

# make bench-unplug N_BENCH=100 T=4: the hot-unplug removal time on the benchmark kernel
# (tests/vm/bench_unplug.sh), N_BENCH processes holding objects, without and with T of them
# posting RDMA WRITEs.
bench-unplug: setup
	@export RDMARS_VM_ARGS="rdmars.n=$(or $(N_BENCH),100) rdmars.t=$(or $(T),4) rdmars.runs=$(or $(RUNS),1) $(BENCH_ARGS)" && \
	$(call bench_vm,bench_unplug,$(TOP)/out/logs/bench-unplug.log) && \
	sed -n '/^=* rdma-rs unplug benchmark/,/^=====/p' $(TOP)/out/logs/bench-unplug.log

# make traffic: the data-path suites (tests/vm/traffic.sh) without the rest.
traffic: modules
	@kb=$(KDIR_CMD) && $(TOP)/tools/vm.sh traffic "$$kb" $(TOP)/out/logs/traffic.log; \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode traffic out/logs/traffic.log

# The verbs-breadth suites (tests/vm/breadth.sh: REREG_MR, hardware counters, rename,
# notifications), about 6 minutes with the rxe comparisons: not in `make check`.
breadth: modules
	@kb=$(KDIR_CMD) && $(TOP)/tools/vm.sh breadth "$$kb" $(TOP)/out/logs/breadth.log; \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode breadth out/logs/breadth.log

# make fuzz N=20000 SEED=1 [VERBOSE=1]: the uverbs fuzzer's suites (tests/vm/fuzz.sh)
# with N steps per run; a failing seed reruns with the same SEED (and N).
SEED ?= 1
fuzz: modules
	@kb=$(KDIR_CMD) && RDMARS_VM_TIMEOUT=$${RDMARS_VM_TIMEOUT:-14400} \
	RDMARS_VM_ARGS="rdmars.n=$(or $(N_FUZZ),$(N)) rdmars.seed=$(SEED) $(if $(VERBOSE),rdmars.verbose=1)" \
	$(TOP)/tools/vm.sh fuzz "$$kb" $(TOP)/out/logs/fuzz.log; \
	grep -E '^ *(fuzz:|diff:|DIVERGENCE)' $(TOP)/out/logs/fuzz.log; \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode fuzz out/logs/fuzz.log
# make faults: every allocation and firmware command point of every verb,
# one at a time (tests/vm/faults.sh); prints the points found per verb.
faults: modules
	@kb=$(KDIR_CMD) && RDMARS_VM_TIMEOUT=$${RDMARS_VM_TIMEOUT:-7200} \
	$(TOP)/tools/vm.sh faults "$$kb" $(TOP)/out/logs/faults.log; \
	grep -E 'faults\| ' $(TOP)/out/logs/faults.log; \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode faults out/logs/faults.log

clean:
	@kb=$$(ls -d $${RDMA_RS_CACHE:-/var/cache/rdma-rs}/kbuild-* 2>/dev/null | head -n1); \
	if [ -n "$(KDIR)$$kb" ]; then $(MAKE) -C "$(or $(KDIR),$$kb)" M=$(TOP) clean; fi
	rm -rf $(TOP)/out $(TOP)/target
