# VM mode `kunit` (tools/vm.sh kunit KBUILD LOG): only our modules' KUnit
# suites (they run at insmod) and the unload, for a quick iteration on one
# layer; `make check` runs them too.
. /rdma-rs/lib.sh
. /rdma-rs/ours.sh

kmemleak_clear

suite_begin vm_ours_kunit
load_ours
load_core_tests
unload_core_tests
unload_ours
suite_end

. /rdma-rs/fwsim.sh
suite_begin vm_fwsim_fabrics
fwsim_fabric_suite
suite_end

suite_begin vm_leaks
kmemleak_check
suite_end
