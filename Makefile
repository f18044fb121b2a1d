# SPDX-License-Identifier: GPL-2.0
# rdma-rs: the Linux RDMA stack in Rust, as out-of-tree Rust-for-Linux modules.
# `make help` lists the targets (from the `## ` comment on each target's line).
#
# Two kinds of targets:
#   for a host:   make, modules_install, install, uninstall build and install the two
#                 production modules (ib_core_rs, mlx5_ib_rs) for the kernel build tree
#                 KDIR (default: the running kernel's /lib/modules/<release>/build),
#                 after tools/preflight.sh checked that tree; nothing else is touched
#   for testing:  check, demo, vm and the rest set up the host (packages, Rust pieces,
#                 Linux 7.3 source: tools/setup.sh, as root) and build the test kernel
#                 (tools/kernel.sh, cached in /var/cache/rdma-rs) when they need them

SHELL := /bin/bash
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))

#@ Variables:
#@   KDIR=<dir>        the kernel build tree (host targets: default the running kernel's
#@                     /lib/modules/<release>/build; test targets: default the test kernel)
#@   LLVM=-19|1|       the kernel's compiler (host targets: read from KDIR's configuration)
#@   DESTDIR=<dir>     a staging root for modules_install, install, uninstall (also
#@                     INSTALL_MOD_PATH=<dir>, Kbuild's name)
#@   N=, SEED=, JOBS=, STACK=, N_BENCH=, RUNS=, N_RUNS=, VERBOSE=1   the test targets' knobs (see the Makefile)

# LLVM: the test kernel is built with clang-19; for a user's tree, unless given, the
# value that fits the compiler in its configuration (tools/preflight.sh --llvm).
ifeq ($(origin LLVM),undefined)
LLVM := -19
LLVM_GIVEN :=
else
LLVM_GIVEN := 1
endif

# The host targets' tree and compiler.
USER_KDIR = $(or $(KDIR),/lib/modules/$(shell uname -r)/build)
USER_LLVM = $(if $(LLVM_GIVEN),$(LLVM),$(shell $(TOP)/tools/preflight.sh --llvm "$(USER_KDIR)"))

# The test targets' tree: the cached test kernel, built on demand unless KDIR is given.
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
# bench_build: sets kb (the bench kernel's build) and mo (the modules built for it).
define bench_build
kb=$(BENCH_KDIR_CMD) && mo=$(TOP)/out/src-$$(basename "$$kb") && rm -rf "$$mo" && mkdir -p "$$mo" && \
	git -C $(TOP) ls-files -z | (cd $(TOP) && tar --null -T - -cf -) | tar -C "$$mo" -xf - && \
	$(MAKE) -s -C "$$kb" LLVM=$(LLVM) M="$$mo" modules
endef
define bench_vm
$(bench_build) && \
	RDMARS_MODDIR="$$mo" RDMARS_VM_TIMEOUT=$${RDMARS_VM_TIMEOUT:-3600} $(TOP)/tools/vm.sh $(1) "$$kb" $(2)
endef

.PHONY: all help modules preflight modules_install install uninstall test-modules setup kernel \
	check demo vm peer soak bench bench-uverbs bench-traffic bench-unplug bench-pcifn traffic breadth fuzz \
	faults qemu-vfio-user pcifn pcifn-compare wire clean

all: modules ## the same as modules

help: ## this list: every target with one line each, then the variables
	@echo "rdma-rs targets (host: modules to uninstall; the rest are for testing):"
	@awk -F ':.*## ' '/^[a-zA-Z0-9_-]+:.*## / { printf "  %-16s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)
	@sed -n 's/^#@ \{0,1\}//p' $(MAKEFILE_LIST)

# --- For a host: the production modules, built for KDIR and installed ---------------
# tools/preflight.sh first: one line for each missing piece of KDIR or the toolchain.

modules: ## (default) ib_core_rs.ko and mlx5_ib_rs.ko for KDIR, after the preflight
	@$(TOP)/tools/preflight.sh "$(USER_KDIR)" "$(USER_LLVM)"
	@$(MAKE) -C "$(USER_KDIR)" LLVM=$(USER_LLVM) M=$(TOP) RDMARS_TEST_MODULES=n modules

preflight: ## whether KDIR can build the modules (version, CONFIG_RUST, rust/*.rmeta, rustc, LLVM)
	@$(TOP)/tools/preflight.sh "$(USER_KDIR)" "$(USER_LLVM)" && echo "preflight: $(USER_KDIR) can build the modules"

modules_install: ## (root) the built modules into /lib/modules/<release>/updates/rdma-rs
	@KDIR="$(USER_KDIR)" LLVM="$(USER_LLVM)" $(TOP)/tools/install.sh modules_install

install: ## (root) modules_install, /etc/modprobe.d/rdma-rs.conf (upstream ib_core, mlx5_ib off), depmod
	@KDIR="$(USER_KDIR)" LLVM="$(USER_LLVM)" $(TOP)/tools/install.sh install

uninstall: ## (root) removes what install wrote (the modules, the modprobe configuration), depmod
	@KDIR="$(KDIR)" $(TOP)/tools/install.sh uninstall

# --- For testing: the test kernel, the VM -----------------------------------------------

test-modules: ## the modules and the test modules for the test kernel (or KDIR), as the VM targets use them
	@[ -n "$(KDIR)" ] || $(TOP)/tools/setup.sh
	@kb=$(KDIR_CMD) && \
	$(MAKE) -C "$$kb" LLVM=$(LLVM) M=$(TOP) modules

setup: ## (root) host packages, rust-src, bindgen, the Linux 7.3 source (check, demo do it)
	@$(TOP)/tools/setup.sh

kernel: setup ## the test kernel, built once into /var/cache/rdma-rs (check, demo do it)
	@$(TOP)/tools/kernel.sh

check: ## every test: formatting, host tests, module build, two VMs; ends "N passed, N failed"
	@$(TOP)/tools/check.sh

qemu-vfio-user: ## trixie's QEMU 11.1 with the vfio-user client, cached (Documentation/pcifn.md)
	@$(TOP)/tools/qemu-vfio-user.sh

pcifn: test-modules ## upstream mlx5_core and mlx5_ib_rs on the emulated ConnectX PCI function
	@kb=$(KDIR_CMD) && $(TOP)/tools/pcifn.sh "$$kb" $(TOP)/out/logs/pcifn.log && \
	grep -E 'pcifn:|mlx5_core|RDMARS-VM|^(not )?ok' $(TOP)/out/logs/pcifn.log; \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode pcifn out/logs/pcifn.log

# Both boots, one after the other (tools/pcifn.sh takes the VM lock), then the host-side diff:
# mode pcifn with the comparison dump (rdmars.pcifn_cmp=1), then mode pcifn_c.
pcifn-compare: test-modules ## the emulated function under upstream C mlx5_ib and under ours, dumps diffed
	@kb=$(KDIR_CMD) && RDMARS_VM_ARGS=rdmars.pcifn_cmp=1 $(TOP)/tools/pcifn.sh "$$kb" $(TOP)/out/logs/pcifn.log && \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode pcifn out/logs/pcifn.log; \
	kb=$(KDIR_CMD) && $(TOP)/tools/pcifn.sh "$$kb" $(TOP)/out/logs/pcifn_c.log ib pcifn_c && \
	grep -E 'pcifn:|RDMARS-VM|^(not )?ok' $(TOP)/out/logs/pcifn_c.log; \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode pcifn_c out/logs/pcifn_c.log; \
	$(TOP)/tools/pcifn-compare.sh $(TOP)/out/logs/pcifn.log $(TOP)/out/logs/pcifn_c.log

# Two VMs at once (each holds a VM slot where slots are shared): not a part of check.
wire: test-modules ## two VMs on one wire: ours (uplink on virtio-net) and upstream rdma_rxe (PEER=ours: ours on both)
	@kb=$(KDIR_CMD) && $(TOP)/tools/wire.sh "$$kb" $(or $(PEER),rxe)

demo: ## the stack in a VM on a simulated ConnectX: ibv_devinfo -v, rdma dev, rdma res
	@$(TOP)/tools/demo.sh

vm: test-modules ## an interactive shell in the test VM (modules in /lib/modules/rdma-rs)
	@$(TOP)/tools/vm.sh shell "$(KDIR_CMD)" $(TOP)/out/logs/shell.log

peer: test-modules ## the upstream C stack (rdma_rxe) in the test VM
	@kb=$(KDIR_CMD) && $(TOP)/tools/vm.sh peer "$$kb" $(TOP)/out/logs/peer.log && \
	cat $(TOP)/out/logs/peer.log

# make soak N=1000 STACK=peer|ours [JOBS=2]: the workload N times in JOBS
# parallel lanes; nothing may grow.
N ?= 100
STACK ?= peer
JOBS ?= 2
soak: test-modules ## the verbs workload N times (N=1000 STACK=peer|ours JOBS=2); nothing may grow
	@kb=$(KDIR_CMD) && RDMARS_VM_TIMEOUT=$${RDMARS_VM_TIMEOUT:-7200} \
	RDMARS_VM_ARGS="rdmars.n=$(N) rdmars.stack=$(STACK) rdmars.jobs=$(JOBS)" \
	$(TOP)/tools/vm.sh soak "$$kb" $(TOP)/out/logs/soak.log && \
	grep -E '^soak:|ok [0-9]|FAIL' $(TOP)/out/logs/soak.log; \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode soak out/logs/soak.log

# make bench N=1000000: the core's data-path dispatch cost (ns/call) next
# to a direct call of the same driver op.
bench: setup ## the core's data-path dispatch cost next to a direct call (benchmark kernel)
	@export RDMARS_VM_ARGS="rdmars.n=$(or $(N_BENCH),1000000) rdmars.runs=$(or $(RUNS),3) $(BENCH_ARGS)" && \
	$(call bench_vm,bench,$(TOP)/out/logs/bench.log) && \
	sed -n '/^=* rdma-rs benchmark/,/^=====/p' $(TOP)/out/logs/bench.log

# make bench-uverbs N_BENCH=5000: ns per QUERY_PORT and PD alloc+dealloc
# pairs/s through libibverbs, ours (rxe_mock0) next to upstream (rdma_rxe).
bench-uverbs: setup ## uverbs round trips (QUERY_PORT, PD alloc+dealloc), ours vs upstream
	@export RDMARS_VM_ARGS="rdmars.n=$(or $(N_BENCH),5000) rdmars.runs=$(or $(RUNS),3) $(BENCH_ARGS)" && \
	$(call bench_vm,bench_uverbs,$(TOP)/out/logs/bench-uverbs.log) && \
	sed -n '/^=* rdma-rs uverbs benchmark/,/^=====/p' $(TOP)/out/logs/bench-uverbs.log

# make bench-traffic N_BENCH=2000: perftest latency and message rate, ours
# (libmlx5 on the simulator) next to upstream (rdma_rxe), and the device
# worker's idle CPU time.
bench-traffic: setup ## ib_send_lat and ib_write_bw through libmlx5 (ours) vs rdma_rxe
	@export RDMARS_VM_ARGS="rdmars.n=$(or $(N_BENCH),2000) rdmars.runs=$(or $(RUNS),3) $(BENCH_ARGS)" && \
	$(call bench_vm,bench_traffic,$(TOP)/out/logs/bench-traffic.log) && \
	sed -n '/^=* rdma-rs traffic benchmark/,/^=====/p' $(TOP)/out/logs/bench-traffic.log

# make bench-unplug N_BENCH=100 T=4: the hot-unplug removal time on the benchmark kernel
# (tests/vm/bench_unplug.sh), N_BENCH processes holding objects, without and with T of them
# posting RDMA WRITEs.
bench-unplug: setup ## hot-unplug removal time under N_BENCH processes, with and without traffic
	@export RDMARS_VM_ARGS="rdmars.n=$(or $(N_BENCH),100) rdmars.t=$(or $(T),4) rdmars.runs=$(or $(RUNS),1) $(BENCH_ARGS)" && \
	$(call bench_vm,bench_unplug,$(TOP)/out/logs/bench-unplug.log) && \
	sed -n '/^=* rdma-rs unplug benchmark/,/^=====/p' $(TOP)/out/logs/bench-unplug.log

# make bench-pcifn N_RUNS=3: the emulated ConnectX-7 function under ours and under upstream
# ib_core + ib_uverbs + mlx5_ib, one stack per boot, alternating, N_RUNS boots of each
# (tools/bench-pcifn.sh, tests/vm/bench_pcifn.sh; about 2 minutes a boot under TCG on the benchmark kernel).
bench-pcifn: setup qemu-vfio-user ## the emulated function: ours vs upstream mlx5_ib, alternating boots (N_RUNS=3)
	@$(bench_build) && \
	RDMARS_MODDIR="$$mo" BENCH_ARGS="$(BENCH_ARGS)" $(TOP)/tools/bench-pcifn.sh "$$kb" $(or $(N_RUNS),3)

# make traffic: the data-path suites (tests/vm/traffic.sh) without the rest.
traffic: test-modules ## the data-path suites alone (pingpong, perftest, traffic test)
	@kb=$(KDIR_CMD) && $(TOP)/tools/vm.sh traffic "$$kb" $(TOP)/out/logs/traffic.log; \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode traffic out/logs/traffic.log

# The verbs-breadth suites (tests/vm/breadth.sh: REREG_MR, hardware counters, rename,
# notifications), about 6 minutes with the rxe comparisons: not in `make check`.
breadth: test-modules ## the verbs-breadth suites (REREG_MR, counters, rename, monitor)
	@kb=$(KDIR_CMD) && $(TOP)/tools/vm.sh breadth "$$kb" $(TOP)/out/logs/breadth.log; \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode breadth out/logs/breadth.log

# make fuzz N=20000 SEED=1 [VERBOSE=1]: the uverbs fuzzer's suites (tests/vm/fuzz.sh)
# with N steps per run; a failing seed reruns with the same SEED (and N).
SEED ?= 1
fuzz: test-modules ## the uverbs fuzzer, ours and upstream rxe compared (N=, SEED=, VERBOSE=1)
	@kb=$(KDIR_CMD) && RDMARS_VM_TIMEOUT=$${RDMARS_VM_TIMEOUT:-14400} \
	RDMARS_VM_ARGS="rdmars.n=$(or $(N_FUZZ),$(N)) rdmars.seed=$(SEED) $(if $(VERBOSE),rdmars.verbose=1)" \
	$(TOP)/tools/vm.sh fuzz "$$kb" $(TOP)/out/logs/fuzz.log; \
	grep -E '^ *(fuzz:|ucma fuzz:|diff:|DIVERGENCE)' $(TOP)/out/logs/fuzz.log; \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode fuzz out/logs/fuzz.log
# make faults: every allocation and firmware command point of every verb,
# one at a time (tests/vm/faults.sh); prints the points found per verb.
faults: test-modules ## every verb under allocation and firmware fault injection, point by point
	@kb=$(KDIR_CMD) && RDMARS_VM_TIMEOUT=$${RDMARS_VM_TIMEOUT:-7200} \
	$(TOP)/tools/vm.sh faults "$$kb" $(TOP)/out/logs/faults.log; \
	grep -E 'faults\| ' $(TOP)/out/logs/faults.log; \
	cd $(TOP) && cargo run --quiet --release -p rdma-rs-vmlog -- --mode faults out/logs/faults.log

clean: ## the build outputs (Kbuild's clean against KDIR or the cached kernel), out/, target/
	@kb=$$(ls -d $${RDMA_RS_CACHE:-/var/cache/rdma-rs}/kbuild-* 2>/dev/null | head -n1); \
	if [ -n "$(KDIR)$$kb" ]; then $(MAKE) -C "$(or $(KDIR),$$kb)" M=$(TOP) clean; fi
	rm -rf $(TOP)/out $(TOP)/target
