. /rdma-rs/lib.sh
RDMARS_SOURCED=1 . /rdma-rs/peer.sh
suite_begin scratch
peer_up
ibv_devinfo -v -d rxe0 | grep -E "atomic|max_inline|GID" 
/rdma-rs/traffic -d rxe0 -g 0 -s 0x5eed -n 100
echo "traffic rc $?"
ibv_rc_pingpong -d rxe0 -g 0 -n 100 -p 18515 > /tmp/s.out 2>&1 &
sleep 1; ibv_rc_pingpong -d rxe0 -g 0 -n 100 -p 18515 127.0.0.1; wait; cat /tmp/s.out
peer_down
suite_end
