// SPDX-License-Identifier: GPL-2.0

//! uverbs_fuzz: random call sequences on a uverbs device file, generated
//! from the project's own spec tables (`uverbs/abi/std_types.rs`, mounted
//! here from the same source the kernel builds), deterministic by seed.
//! Run in the test VM (`make fuzz`, the `vm_fuzz*` suites); see
//! `Documentation/testing.md`, "The uverbs fuzzer".
//!
//!   uverbs_fuzz -d /dev/infiniband/uverbsN [-i DRIVER_ID] [-s SEED] [-n STEPS]
//!               [-t TRACE] [-p PROGRESS] [-v] [-T] [-u] [-g ADDR[,ADDR...]]
//!   uverbs_fuzz -c OURS.trace UPSTREAM.trace
//!   uverbs_fuzz -U -a LOCAL,PEER,SILENT,UNROUTABLE,GROUP [-s SEED] [-n STEPS] [-t TRACE] [-v]
//!
//! -t writes the trace the differential mode compares; -v prints every call
//! before it is made; -T runs no threads (a slice whose only concurrency is
//! fork); -u is for upstream's stack: no GET_CONTEXT ioctl (it leaks when
//! it fails in Linux 7.3; see tests/userspace/uverbs_abi.c); -g gives IPv4 and IPv6
//! addresses whose RoCE GIDs CREATE_AH uses as destinations (RoCE address resolution: local
//! addresses, neighbours, unroutable ones), with source GID indexes 0-7, and GID_ENTRY
//! queries indexes 0-7. -U is the ucma mode (`src/ucma.rs`): /dev/infiniband/rdma_cm, its
//! addresses by role (this host's device, the peer device, a silent neighbour, an unroutable
//! address, a multicast group); its traces compare with -c as well. The exit status is 2 after a kernel report, 1 on a usage error.

#![deny(warnings, rust_2018_idioms)]

// The ABI modules carry the kernel side's whole vocabulary; the fuzzer
// reads the tables and a few layouts.
#[allow(dead_code, unreachable_pub, clippy::all)]
#[path = "../../../uverbs/abi.rs"]
mod abi;

mod diff;
mod fuzzer;
mod ioctl;
mod kmsg;
mod names;
mod rng;
mod state;
mod stats;
mod sys;
mod ucma;
mod write;

use std::time::Instant;

struct Args {
    dev: String,
    driver_id: u32,
    seed: u64,
    steps: u64,
    trace: Option<String>,
    progress: u64,
    verbose: bool,
    threads: bool,
    upstream: bool,
    gids: Vec<[u8; 16]>,
}

fn usage() -> ! {
    eprintln!(
        "usage: uverbs_fuzz -d DEV [-i DRIVER_ID] [-s SEED] [-n STEPS] [-t TRACE] [-p N] [-v] [-T] [-u] [-g ADDR,...]"
    );
    eprintln!("       uverbs_fuzz -c OURS.trace UPSTREAM.trace");
    eprintln!("       uverbs_fuzz -U -a LOCAL,PEER,SILENT,UNROUTABLE,GROUP [-s SEED] [-n STEPS] [-t TRACE] [-v]");
    std::process::exit(1)
}

/// The RoCE GID of an IPv4 (`::ffff:a.b.c.d`) or IPv6 address.
fn gid_of(s: &str) -> Option<[u8; 16]> {
    if let Ok(a) = s.parse::<std::net::Ipv4Addr>() {
        return Some(a.to_ipv6_mapped().octets());
    }
    s.parse::<std::net::Ipv6Addr>().ok().map(|a| a.octets())
}

fn parse_args(v: &[String]) -> Args {
    let mut a = Args {
        dev: "/dev/infiniband/uverbs0".into(),
        driver_id: 14,
        seed: 1,
        steps: 10000,
        trace: None,
        progress: 20000,
        verbose: false,
        threads: true,
        upstream: false,
        gids: Vec::new(),
    };
    let mut i = 0;
    while i < v.len() {
        let val = || v.get(i + 1).cloned().unwrap_or_else(|| usage());
        let num = |s: String| s.parse::<u64>().unwrap_or_else(|_| usage());
        match v[i].as_str() {
            "-d" => a.dev = val(),
            "-i" => a.driver_id = num(val()) as u32,
            "-s" => a.seed = num(val()),
            "-n" => a.steps = num(val()),
            "-t" => a.trace = Some(val()),
            "-p" => a.progress = num(val()).max(1),
            "-g" => {
                a.gids = val()
                    .split(',')
                    .map(|s| gid_of(s).unwrap_or_else(|| usage()))
                    .collect()
            }
            "-v" => {
                a.verbose = true;
                i += 1;
                continue;
            }
            "-T" => {
                a.threads = false;
                i += 1;
                continue;
            }
            "-u" => {
                a.upstream = true;
                i += 1;
                continue;
            }
            _ => usage(),
        }
        i += 2;
    }
    a
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.iter().any(|a| a == "-U") {
        let rest: Vec<String> = argv.iter().filter(|a| *a != "-U").cloned().collect();
        ucma::run(&rest);
    }
    if argv.first().map(String::as_str) == Some("-c") {
        let (Some(a), Some(b)) = (argv.get(1), argv.get(2)) else {
            usage()
        };
        let ra = std::fs::read_to_string(a).unwrap_or_else(|e| {
            eprintln!("{a}: {e}");
            std::process::exit(1)
        });
        let rb = std::fs::read_to_string(b).unwrap_or_else(|e| {
            eprintln!("{b}: {e}");
            std::process::exit(1)
        });
        diff::compare(&ra, &rb);
        return;
    }
    let args = parse_args(&argv);
    let mut watch = kmsg::Watch::open();
    let mut f = fuzzer::Fuzzer::new(args.seed, &args.dev, args.driver_id, fuzzer::Memory::new());
    f.verbose = args.verbose;
    f.threads_enabled = args.threads;
    f.no_ioctl_get_context = args.upstream;
    f.gids = args.gids;
    if let Some(t) = &args.trace {
        f.trace = std::fs::File::create(t).ok();
    }
    println!(
        "fuzz: {} driver_id {} seed {} steps {}",
        args.dev, args.driver_id, args.seed, args.steps
    );
    let t0 = Instant::now();
    f.start();
    let mut report = None;
    for s in 1..=args.steps {
        f.step();
        if s % 64 == 0 || s == args.steps {
            if let Some(line) = watch.as_mut().and_then(|w| w.poll()) {
                report = Some((s, line));
                break;
            }
        }
        if s % args.progress == 0 {
            let dt = t0.elapsed().as_secs_f64();
            println!(
                "fuzz: step {s} calls {} ({:.0} calls/s)",
                f.stats.calls + f.child_calls,
                (f.stats.calls + f.child_calls) as f64 / dt
            );
        }
    }
    f.finish();
    let dt = t0.elapsed().as_secs_f64();
    let total = f.stats.calls + f.child_calls;
    let (lines, c) = f.stats.coverage();
    for l in &lines {
        println!("{l}");
    }
    println!(
        "fuzz: seed {} steps {}: {total} calls ({} in forked children) in {dt:.1} s: {:.0} calls/s, {} succeeded",
        args.seed,
        f.step_no,
        f.child_calls,
        total as f64 / dt.max(1e-9),
        f.stats.ok
    );
    println!(
        "fuzz: coverage: ioctl methods {}/{} called ({} with a success), attributes {}/{} sent ({} in a success), write commands {}/{} called ({} with a success)",
        c.methods.called,
        c.methods.total,
        c.methods.succeeded,
        c.attrs.called,
        c.attrs.total,
        c.attrs.succeeded,
        c.writes.called,
        c.writes.total,
        c.writes.succeeded
    );
    println!("R ok fuzz seed {}: {total} calls", args.seed);
    match report {
        Some((s, line)) => {
            println!(
                "R fail fuzz seed {}: no kernel report: after step {s}: {line}",
                args.seed
            );
            println!(
                "fuzz: KERNEL REPORT after step {s} (seed {}): {line}",
                args.seed
            );
            println!(
                "fuzz: the last {} calls (step.call errno description):",
                f.ring.len()
            );
            for l in &f.ring {
                println!("fuzz|   {l}");
            }
            println!(
                "fuzz: reproduce: make fuzz SEED={} N={s} (VERBOSE=1 prints every call)",
                args.seed
            );
            std::process::exit(2);
        }
        None => println!("R ok fuzz seed {}: no kernel report", args.seed),
    }
}
