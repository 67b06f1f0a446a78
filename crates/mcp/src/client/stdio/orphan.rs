//! Children die with toolgate: a stdio upstream's child gets `SIGKILL` from
//! the kernel when toolgate ends without stopping it (killed with `SIGKILL`,
//! crashed), so no server outlives the gateway that owned its pipes.
//!
//! Linux's `PR_SET_PDEATHSIG`, set in the child between `fork` and `exec`.
//! The signal follows the *thread* that spawned the child; toolgate spawns
//! children from its runtime's worker threads, which live as long as the
//! process. A grandchild (the server `npx` starts, say) is not signalled,
//! but its standard input closes with toolgate, which ends an MCP server.

use tokio::process::Command;

/// Arranges for `cmd`'s child to be killed when toolgate dies.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(super) fn die_with_parent(cmd: &mut Command) {
    use nix::sys::prctl::set_pdeathsig;
    use nix::sys::signal::Signal;
    use nix::unistd::{Pid, getpid, getppid};

    let parent: Pid = getpid();
    // SAFETY: the closure runs in the forked child before `exec`, where only
    // async-signal-safe calls are allowed: it makes two system calls
    // (prctl, getppid) and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            set_pdeathsig(Signal::SIGKILL)?;
            // toolgate died between fork and prctl: the signal will never
            // come, so the child must not run.
            if getppid() != parent {
                return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
            }
            Ok(())
        });
    }
}

/// Elsewhere there is no parent-death signal: children are stopped by
/// toolgate's shutdown only.
#[cfg(not(target_os = "linux"))]
pub(super) fn die_with_parent(_cmd: &mut Command) {}
